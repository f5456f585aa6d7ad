// Package scripttest is the shared vocabulary of the tool layer's datadriven
// scenario scripts (testdata/sNN_*.txt of toolactors, tools, managed, pty):
// real files in real temporary directories, named in scripts as $LOC (the
// Location), $OUT (a directory outside it) and whatever else a harness adds,
// and output normalized back to those names so that it does not depend on
// the machine.
//
// Files handles the file commands every harness shares:
//
//	write path=a.txt          the command's input, as the file's content
//	write path=big.txt lines=5000 [prefix=row]   "row 1\n" … "row 5000\n"
//	write path=bin hex=0001ff bytes given in hex
//	mkdir path=d
//	symlink path=link to=$OUT/secret.txt
//	rm path=a.txt
//	cat path=a.txt            the content, or "(no such file)"
//	files [dir=$LOC]          every file, link and empty directory under dir, with contents
//	gone pidfile=bg           whether the process whose PID the file holds is dead
//
// Relative paths are relative to $LOC. It is test support only: it asserts
// nothing itself.
package scripttest
