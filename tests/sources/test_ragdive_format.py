"""Export/import in the RAG-DIVE reference format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ragdive.core.records import Context, Conversation, Document, Turn
from pytest_ragdive.sources.ragdive_format import (
    RagdiveFormatError,
    export_ragdive,
    import_ragdive,
    import_ragdive_documents,
    load_ragdive,
    read_ragdive,
    write_ragdive,
)

DOC = Document(
    id="eiffel", title="Eiffel Tower", text="The Eiffel Tower was built from 1887 to 1889 by Gustave Eiffel."
)


def generated() -> Conversation:
    return Conversation(
        id="gen-000-eiffel-default",
        suite="extended",
        run=2,
        role="default",
        source="generated",
        document_id="eiffel",
        turns=[
            Turn(
                index=0,
                rag_input="When was the Eiffel Tower built?",
                standalone_question="When was the Eiffel Tower built?",
                ground_truth="From 1887 to 1889.",
                question_type="Initial",
                answer="It was built between 1887 and 1889.",
                contexts=[Context(id="eiffel#0", doc_id="eiffel", text="The Eiffel Tower was built ...", score=0.9)],
                citations=["eiffel"],
                relevant_doc_ids=["eiffel"],
            ),
            Turn(
                index=1,
                rag_input="Who built it?",
                standalone_question="Who built the Eiffel Tower?",
                ground_truth="Gustave Eiffel's company.",
                question_type="Correction",
                answer="Gustave Eiffel.",
                contexts=[],
                flags=["regenerated"],
                relevant_doc_ids=["eiffel"],
            ),
        ],
    )


def test_export_has_the_reference_keys() -> None:
    [item] = export_ragdive([generated()], [DOC])
    assert item["title"] == "Eiffel Tower" and item["document"] == DOC.text and item["role"] == "default"
    t0, t1 = item["conversation"]
    assert set(t0) >= {"rag_input", "question", "answer", "type", "rag_answer", "context"}
    assert t0["question"] == "When was the Eiffel Tower built?" and t0["answer"] == "From 1887 to 1889."
    assert t0["type"] == "Initial" and t1["type"] == "Correction"
    assert t0["rag_answer"] == "It was built between 1887 and 1889."
    # LangChain Document dicts, as the reference evaluator reads them (doc['page_content'])
    assert t0["context"][0]["page_content"] == "The Eiffel Tower was built ..."
    assert t0["context"][0]["type"] == "Document"
    json.dumps(item)  # plain JSON


def test_round_trip_preserves_the_fields() -> None:
    conv = generated()
    back = import_ragdive(export_ragdive([conv], {"eiffel": DOC}))
    assert back == [conv]
    docs = import_ragdive_documents(export_ragdive([conv], [DOC]))
    assert docs == [DOC]


def test_import_reference_data(tmp_path: Path) -> None:
    ref = [
        {
            "title": "Mr. Lawrence",
            "document": "Mr. Lawrence is an American voice actor ...",
            "role": "Your questions are very short and precise",
            "conversation": [
                {
                    "rag_input": "When did Mr. Lawrence start as story editor?",
                    "question": "When did Mr. Lawrence start as story editor?",
                    "answer": "2016",
                    "type": "Initial",
                    "rag_answer": "In 2016.",
                    "context": [
                        {
                            "id": "55a7",
                            "metadata": {"title": "Mr. Lawrence"},
                            "page_content": "chunk",
                            "type": "Document",
                        }
                    ],
                    "index": 0,
                },
                {
                    "rag_input": "Did he write for it before?",
                    "question": "Did Mr. Lawrence write for SpongeBob before 2016?",
                    "answer": "Yes.",
                    "type": "follow-up",
                    "rag_answer": "Yes.",
                    "context": "a plain string context",
                    "index": 1,
                },
            ],
        }
    ]
    path = tmp_path / "conversation_data.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in ref))
    convs, docs = load_ragdive(path)
    [c] = convs
    assert c.source == "ragdive" and c.id == "ragdive-000-Mr._Lawrence" and c.document_id == "Mr._Lawrence"
    assert c.role == "Your questions are very short and precise"
    assert [t.question_type for t in c.turns] == ["Initial", "Follow-up"]
    assert c.turns[0].contexts[0].text == "chunk" and c.turns[0].contexts[0].id == "55a7"
    assert c.turns[1].contexts[0].text == "a plain string context"
    assert c.turns[1].standalone_question.startswith("Did Mr. Lawrence")
    assert docs[0].id == "Mr._Lawrence" and docs[0].title == "Mr. Lawrence"


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_file_round_trip(tmp_path: Path, suffix: str) -> None:
    path = write_ragdive(tmp_path / f"out{suffix}", [generated()], [DOC])
    text = path.read_text()
    assert text.startswith("[") == (suffix == ".json")
    convs, docs = load_ragdive(path)
    assert convs == [generated()] and docs == [DOC]
    assert read_ragdive(path)[0]["title"] == "Eiffel Tower"


def test_bad_data_names_the_item() -> None:
    with pytest.raises(RagdiveFormatError, match="item 0"):
        import_ragdive([{"title": "x"}])
    with pytest.raises(RagdiveFormatError, match="item 0, turn 0"):
        import_ragdive([{"title": "x", "conversation": [{"question": "no rag_input"}]}])
