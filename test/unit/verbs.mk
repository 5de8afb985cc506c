# unit tests: verbs
