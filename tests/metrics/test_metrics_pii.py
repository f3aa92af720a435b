"""Personal data in answers (metrics/pii.py): each detector fires on its kind and stays silent
on look-alikes; the allow-list, masking, and what a safety failure says (never the value)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ragdive.core.records import Conversation, Turn
from pytest_ragdive.metrics.offline import safety_failures, score_conversation
from pytest_ragdive.metrics.pii import PiiCheck, find_pii, luhn_ok, mask, mask_text

ROOT = Path(__file__).resolve().parents[2]

# (text, kind, label) that must be found
FIRES = [
    pytest.param("Write to jane.doe@example.com for help.", "email", "", id="email"),
    pytest.param("Call +44 20 7946 0958 today.", "phone", "", id="phone-international"),
    pytest.param("Call 0044 20 7946 0958 today.", "phone", "", id="phone-00"),
    pytest.param("Call (555) 123-4567.", "phone", "", id="phone-area-code"),
    pytest.param("Call 555 123 4567.", "phone", "", id="phone-groups"),
    pytest.param("Call 1-800-555-0199.", "phone", "", id="phone-dashes"),
    pytest.param("The card 4242 4242 4242 4242 was charged.", "card", "", id="card-groups"),
    pytest.param("The card 4242424242424242 was charged.", "card", "", id="card-run"),
    pytest.param("Pay to DE89 3704 0044 0532 0130 00.", "iban", "", id="iban-de"),
    pytest.param("Pay to GB82WEST12345698765432.", "iban", "", id="iban-gb"),
    pytest.param("Her SSN is 123-45-6789.", "national_id", "US SSN", id="us-ssn"),
    pytest.param("NI number AB 12 34 56 C.", "national_id", "UK NINO", id="uk-nino"),
    pytest.param("DNI 12345678Z.", "national_id", "ES DNI/NIE", id="es-dni"),
    pytest.param("NIE X1234567L.", "national_id", "ES DNI/NIE", id="es-nie"),
    pytest.param("NIR 1 84 12 76 451 089 46.", "national_id", "FR NIR", id="fr-nir"),
    pytest.param("Codice fiscale RSSMRA85T10A562S.", "national_id", "IT codice fiscale", id="it-cf"),
]

# look-alikes that are not personal data
SILENT = [
    pytest.param("Email support from the help centre at help.lumio.io.", id="url-not-email"),
    pytest.param("Order 12345678 shipped on 2024-01-15.", id="order-number-and-iso-date"),
    pytest.param("It was renewed on 15.01.2024 and 15 01 2024.", id="dotted-and-spaced-dates"),
    pytest.param("Phone support runs from 08:00 to 20:00 on weekdays.", id="times"),
    pytest.param("Enterprise allows 3,000 requests per minute and 99.95% uptime.", id="counts-and-percentages"),
    pytest.param("Allow-list 10.0.0.1 in your firewall.", id="ip-address"),
    pytest.param("The card 4242 4242 4242 4241 was declined.", id="card-failing-luhn"),
    pytest.param("Use 0000 0000 0000 0000 as a test.", id="card-all-zeros"),
    pytest.param("Reference DE89 3704 0044 0532 0130 01.", id="iban-failing-mod-97"),
    pytest.param("Reference DE89 3704 0044 0532 0130.", id="iban-wrong-length"),
    pytest.param("Code 000-12-3456 and 666-12-3456.", id="ssn-invalid-area"),
    pytest.param("DNI 12345678A.", id="dni-wrong-letter"),
    pytest.param("NIR 1 84 12 76 451 089 47.", id="nir-wrong-key"),
    pytest.param("We are certified to ISO 27001; error P4021 and H101.", id="standards-and-error-codes"),
]


@pytest.mark.parametrize(("text", "kind", "label"), FIRES)
def test_each_detector_fires(text: str, kind: str, label: str) -> None:
    hits = find_pii(text)
    assert [(h.kind, h.label) for h in hits] == [(kind, label)], hits
    h = hits[0]
    value = text[h.start : h.end]
    assert h.masked != value and len(h.masked) == len(value) or kind == "email"
    assert find_pii(text, kinds=[k for k in ("email", "phone", "card", "iban", "national_id") if k != kind]) == [] \
        or kind == "card"  # a card run may also read as a phone number when the card detector is off


@pytest.mark.parametrize("text", SILENT)
def test_look_alikes_are_not_personal_data(text: str) -> None:
    assert find_pii(text) == []


def test_luhn() -> None:
    assert luhn_ok("4242 4242 4242 4242") and luhn_ok("79927398713")
    assert not luhn_ok("79927398710") and not luhn_ok("0000") and not luhn_ok("")


def test_masking_keeps_the_shape_and_never_the_value() -> None:
    assert mask("email", "jane.doe@example.com") == "j***@e***.com"
    assert mask("card", "4242 4242 4242 4242") == "**** **** **** 4242"
    assert mask("iban", "DE89 3704 0044 0532 0130 00") == "DE** **** **** **** **** 00"
    assert mask("phone", "+44 20 7946 0958") == "+** ** **** **58"
    text = "Mail jane.doe@example.com or call +44 20 7946 0958."
    masked = mask_text(text, find_pii(text))
    assert masked == "Mail j***@e***.com or call +** ** **** **58."


def test_the_allow_list_is_how_a_company_says_its_contacts_are_public() -> None:
    text = "Write to Support@Lumio.example or call +1 (800) 555-0199; my address is jane@lumio.example."
    check = PiiCheck.of(["email", "phone"], ["support@lumio.example", "+1 800 555 0199"])
    assert [(h.kind, h.masked) for h in check.find(text)] == [("email", "j***@l***.example")]
    assert len(find_pii(text)) == 3  # without the allow-list: all three


def test_a_hit_fails_the_conversation_naming_kind_and_masked_value_only() -> None:
    conv = Conversation(id="c", turns=[
        Turn(index=0, rag_input="How do I reach you?", answer="Call our agent Jane on +44 20 7946 0958."),
        Turn(index=1, rag_input="Thanks", answer="You're welcome."),
    ])
    score_conversation(conv)
    assert conv.turns[0].scores["safety_pass_rate"] == 0.0 and conv.turns[1].scores["safety_pass_rate"] == 1.0
    assert conv.failures == ["turn 1: answer contains personal data: phone +** ** **** **58 at characters 23-39"]
    assert "7946" not in json.dumps(conv.failures)
    allowed = PiiCheck.of(["phone"], ["+44 20 7946 0958"])
    assert safety_failures(conv, allowed) == []


def test_the_example_golden_answers_and_corpus_have_no_false_violation() -> None:
    texts = [json.loads(line)["text"] for line in (ROOT / "example_project/corpus/helpcentre.jsonl").open()]
    texts += [p.read_text() for p in (ROOT / "golden").rglob("*.*")]
    assert [h for t in texts for h in find_pii(t)] == []


def test_the_digit_prefilter_never_changes_what_is_found():
    """find() skips the detectors a text has too few digits (or no "@") for: on texts built
    from every detector's shapes, cut and joined at random, it finds what the full scan finds."""
    import random

    from pytest_ragdive.metrics.pii import PiiCheck

    pieces = [
        "jane.doe@example.com", "+1 (800) 555-0199", "020 7946 0958", "01 23 45 67 89", "4242 4242 4242 4242",
        "GB82 WEST 1234 5698 7654 32", "123-45-6789", "AB 12 34 56 C", "RSSMRA85T10A562S", "12345678Z",
        "1 85 05 78 006 084 36", "2024-01-15", "10.0.0.1", "order 1234567", "$19", "30 days", "a@b", "x 12",
    ]
    rng = random.Random(3)
    pc = PiiCheck(allow=("020 7946 0958",))
    checked = 0
    for _ in range(3000):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.5:  # cut: fewer digits than a whole value
            a = rng.randrange(len(text))
            text = text[a : a + rng.randint(1, 30)]
        full = pc._scan(text, True, 10**6) if text else []
        assert pc.find(text) == full, text
        checked += bool(full)
    assert checked > 300  # the texts held hits, not only misses
