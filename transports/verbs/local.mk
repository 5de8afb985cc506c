# Raw verbs backend (libibverbs + librdmacm): owned by the verbs work (issue 3).
