// Package cli is the kong command tree of the sessionrt binary.
//
// Each command group lives in its own file and its Run method is a thin shell:
// it parses, opens what it needs from the packages below and prints. No
// runtime logic lives here. Exit codes: 0 success, 1 the operation failed,
// 2 the command line (or a request) was malformed, 3 not found, 4 conflict.
package cli
