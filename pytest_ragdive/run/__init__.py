"""Running conversations: which ones (:mod:`.planning`), from plan to scores
(:mod:`.pipeline`), the one turn loop against the chatbot (:mod:`.turn_loop`),
the chatbot itself (:mod:`.target`: the protocol and the fixture adapter;
:mod:`.http_target`: a chatbot behind HTTP), who plays the user (:mod:`.users`),
conversations held until the end of a run (:mod:`.held`), the stand-alone API
(:mod:`.api`, ``run_suite``) and the cost estimate (:mod:`.estimate`)."""
