package templates

import "io/fs"

func fsRead(f fs.FS, p string) ([]byte, error) { return fs.ReadFile(f, p) }
