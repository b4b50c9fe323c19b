// Pure HTTP/1.1 wire logic: no I/O.
