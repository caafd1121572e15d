# CTest's first test (CMakeLists.txt, ZTVM_OPEN_GUARD): empties the guard's log and lists what is beside
# the checkout (PARENT) now, before any test runs, in SIBLINGS. Reads beside the checkout are flagged
# only inside these entries: what the tests create there (temporary folders, when the checkout is in
# /tmp) is theirs.
file(REMOVE ${LOG})
file(GLOB names LIST_DIRECTORIES true RELATIVE ${PARENT} ${PARENT}/*)
list(JOIN names "\n" text)
file(WRITE ${SIBLINGS} "${text}\n")
