# unit tests: reduce
