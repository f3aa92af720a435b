"""The sharded multi-turn diagnosis (Lost in Conversation, RAG variant), in one folder:
the sharded questions and their checks (:mod:`.questions`), the sharding helper
(:mod:`.helper`), the five conditions as users (:mod:`.conditions`), the shard
simulator and response classifier (:mod:`.simulator`, :mod:`.classify`), aptitude and
unreliability (:mod:`.aptitude`), the diagnosis of a suite (:mod:`.diagnosis`, its
records in :mod:`.records`) and its decomposition table (:mod:`.report`)."""
