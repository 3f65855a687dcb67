/// jaq's version: the one place it is written. The Makefile reads it from here for the library's
/// file name, the pkg-config file and the package (`make version` prints it).
let jaqVersion = "1.0.0"
