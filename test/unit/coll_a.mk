# unit tests: allreduce, reduce, reduce_scatter.  Owned by the coll-a helper
# (included from coll.mk); empty until they add theirs.
