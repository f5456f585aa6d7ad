//go:build !linux

package cli

import "errors"

func isTerminal(int) bool { return false }

func termSize(int) (int, int, error) { return 0, 0, errors.New("terminal size: only on Linux") }

func makeRaw(int) (func(), error) { return nil, errors.New("raw mode: only on Linux") }
