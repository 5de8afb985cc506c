# unit tests: coll
