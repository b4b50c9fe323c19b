// HTTPCache module.
