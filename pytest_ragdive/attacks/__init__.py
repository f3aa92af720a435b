"""Adversarial users and poisoned documents (docs/safety.md).

- :mod:`.records`: the ``AttackTurn`` a turn of an attack conversation carries;
- :mod:`.checks`: the deterministic checks (canaries, personal data, refusals,
  instruction-following markers, commitments beyond policy);
- :mod:`.library`: the bundled scripted attack set (``data/*.yaml``) and users' own files;
- :mod:`.poison`: poisoned documents, a poisoned copy of a corpus, the wrap that hands
  them to a target that accepts extra documents;
- :mod:`.score`: the attack metrics of one conversation (``attack_success_rate`` and one
  per family), the failures quoted masked.

Nothing here is imported when the plugin loads.
"""
