package tools

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

func finish(out string, err error) (Result, error) {
	var ae *agentError
	switch {
	case err == nil:
		return Result{Content: out}, nil
	case errors.As(err, &ae):
		return Result{IsError: true, Content: ae.msg}, nil
	}
	return Result{}, err
}

// sniffLen is how much of a file is looked at to tell text from binary.
const sniffLen = 8 << 10

// looksBinary reports whether data (the start of a file) holds a NUL byte.
func looksBinary(data []byte) bool {
	if len(data) > sniffLen {
		data = data[:sniffLen]
	}
	return bytes.IndexByte(data, 0) >= 0
}

// lineReader reads lines, keeping at most max bytes of each and
// discarding the rest of a longer line (reporting that it did), so one huge
// line cannot use unbounded memory.
type lineReader struct {
	r   *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its "\n", whether it was cut, and
// io.EOF after the last line.
func (l *lineReader) next() (line []byte, cut bool, err error) {
	var buf []byte
	n := 0
	for {
		chunk, err := l.r.ReadSlice('\n')
		content := chunk
		if err == nil {
			content = chunk[:len(chunk)-1]
		}
		n += len(content)
		if room := l.max - len(buf); room > 0 {
			buf = append(buf, content[:min(room, len(content))]...)
		}
		switch {
		case err == nil:
			return buf, n > l.max, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if n == 0 {
				return nil, false, io.EOF
			}
			return buf, n > l.max, nil
		default:
			return nil, false, err
		}
	}
}
