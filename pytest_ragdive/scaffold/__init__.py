"""``python -m pytest_ragdive init``'s files: the conftest target, the config, the golden
files (:mod:`.project`), the CI workflow (:mod:`.workflow`), an HTTP target's reply paths
guessed from one reply (:mod:`.reply_paths`). No pytest import."""
