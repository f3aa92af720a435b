"""Who talks to the chatbot: implementations of :class:`pytest_ragdive.run.turn_loop.User`.

- :mod:`.scripted`: golden turns, replayed verbatim;
- :mod:`.simulator`: the RAG-DIVE Conversation Generator with its validator;
- :mod:`.sharded`: the sharded diagnosis' conditions (FULL, CONCAT, SHARDED,
  RECAP, SNOWBALL), offline or with the LLM shard simulator (:mod:`.shard_simulator`).

Each only proposes the next user turn; the runner sends it to the target.
"""
