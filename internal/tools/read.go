package tools

import (
	"agentrun.dev/agentrun/internal/catalog"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// maxReadOutput bounds what one read returns.
const maxReadOutput = 256 << 10

func readRun(ctx context.Context, root *os.Root, in *catalog.Read) (string, error) {
	display := in.Path
	offset := int64(1)
	if in.Offset != nil {
		offset = *in.Offset
	}
	limit, hasLimit := int64(0), in.Limit != nil
	if hasLimit {
		limit = *in.Limit
	}
	p, err := agentPath(root, display)
	if err != nil {
		return "", err
	}
	// O_NONBLOCK so that a FIFO cannot block the call; the type is checked
	// on the open file, not before opening it.
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", pathErr(display, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read %s: %w", display, err)
	}
	if fi.IsDir() {
		return "", agentErrorf("%q is a directory; use ls to list it", display)
	}
	if !fi.Mode().IsRegular() {
		return "", agentErrorf("%q is not a regular file (%s)", display, fileKind(fi.Mode()))
	}
	lr := newLineReader(f, maxReadOutput)
	head, err := lr.r.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return "", pathErr(display, err)
	}
	if looksBinary(head) {
		return "", binaryFile(display)
	}

	var b strings.Builder
	var n, first, last int64
	for n = 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		line, cut, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", pathErr(display, err)
		}
		if looksBinary(line) {
			return "", binaryFile(display)
		}
		if n < offset {
			continue
		}
		if hasLimit && n >= offset+limit {
			break
		}
		text := string(line)
		if cut {
			text += " [line cut: longer than 256 KiB]"
		}
		entry := fmt.Sprintf("%6d\t%s\n", n, text)
		if b.Len()+len(entry) > maxReadOutput {
			if first == 0 {
				// A single line larger than the budget: show what fits.
				b.WriteString(entry[:maxReadOutput-b.Len()])
				b.WriteString("\n")
				first, last = n, n
				n++
			}
			fmt.Fprintf(&b, "[truncated at 256 KiB: showed lines %d-%d; call read with offset=%d to continue]\n", first, last, n)
			return b.String(), nil
		}
		b.WriteString(entry)
		if first == 0 {
			first = n
		}
		last = n
	}
	if first == 0 {
		total := n - 1
		if total == 0 {
			return fmt.Sprintf("%q is empty", display), nil
		}
		return "", agentErrorf("offset %d is past the end of %q, which has %d lines", offset, display, total)
	}
	return b.String(), nil
}

func binaryFile(display string) error {
	return agentErrorf("%q looks like a binary file (it contains NUL bytes); read only shows text files", display)
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "mode " + m.String()
}
