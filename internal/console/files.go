package console

import (
	"bytes"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"agentrun.dev/agentrun/internal/store"
)

// The run's files: the run page lists the run folder as saved in the store, and
// GET /runs/NAME/files/PATH serves one saved file: text as text/plain, the raster images a
// browser computer saves (screenshots) inline with their own type, anything else as a download.
// Every answer carries X-Content-Type-Options: nosniff and a sandboxing CSP, so a file the agent
// wrote never runs as a page of the console.

// fileRow is one file of the run folder as the run page lists it.
type fileRow struct {
	Path     string
	Href     string
	Size     string
	Bytes    int64
	Modified string
}

func fileRows(run string, files []store.File) []fileRow {
	rows := make([]fileRow, 0, len(files))
	for _, f := range files {
		rows = append(rows, fileRow{Path: f.Path, Href: fileHref(run, f.Path), Size: sizeText(f.Size), Bytes: f.Size,
			Modified: f.UpdatedAt.Format("2006-01-02 15:04:05")})
	}
	return rows
}

// fileHref is a file's link, each path segment escaped (a name may hold '#', '?' or '%').
func fileHref(run, p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/runs/" + url.PathEscape(run) + "/files/" + strings.Join(segs, "/")
}

func sizeText(n int64) string {
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1024*1024:
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + " KiB"
	}
	return strconv.FormatFloat(float64(n)/(1024*1024), 'f', 1, 64) + " MiB"
}

// cleanFilePath returns the run-folder path a request names, or false for a path that climbs
// out of the folder or starts at the root.
func cleanFilePath(p string) (string, bool) {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || strings.ContainsRune(p, 0) {
		return "", false
	}
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return "", false
		}
	}
	if len(p) >= 2 && p[1] == ':' && ('a' <= p[0]|0x20 && p[0]|0x20 <= 'z') { // C:\...
		return "", false
	}
	return path.Clean(p), true
}

// inlineImages are the types a browser shows as an image and never runs (no SVG: it can hold
// script).
var inlineImages = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// fileType decides how a saved file is served: its Content-Type and whether it is a download.
func fileType(content []byte) (ctype string, attachment bool) {
	sniffed := http.DetectContentType(content)
	if inlineImages[sniffed] {
		return sniffed, false
	}
	head := content
	if len(head) > 8192 {
		head = head[:8192]
		// Do not count a multi-byte rune cut at the end as invalid.
		for i := 0; i < utf8.UTFMax && len(head) > 0 && !utf8.Valid(head); i++ {
			head = head[:len(head)-1]
		}
	}
	if utf8.Valid(head) && bytes.IndexByte(head, 0) < 0 {
		return "text/plain; charset=utf-8", false
	}
	return "application/octet-stream", true
}

// file is GET /runs/NAME/files/PATH.
func (c *Console) file(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if _, err := c.Store.GetRun(r.Context(), name); err != nil {
		c.fileNotFound(w, r, http.StatusNotFound, "", "", "There is no run "+name+".")
		return
	}
	raw := r.PathValue("path")
	p, ok := cleanFilePath(raw)
	if !ok {
		c.fileNotFound(w, r, http.StatusBadRequest, name, raw, "A file's path is relative to the run folder and stays inside it: "+raw+" does not.")
		return
	}
	f, err := c.Store.GetFile(r.Context(), name, p)
	if errors.Is(err, store.ErrNotFound) {
		c.fileNotFound(w, r, http.StatusNotFound, name, p, "The run folder of "+name+" has no file "+p+" (it was never saved, or was deleted).")
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	ctype, attachment := fileType(f.Content)
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Security-Policy", "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox")
	h.Set("Cache-Control", "private, no-cache")
	if attachment {
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	}
	http.ServeContent(w, r, "", f.UpdatedAt, bytes.NewReader(f.Content))
}

func (c *Console) fileNotFound(w http.ResponseWriter, r *http.Request, status int, run, p, msg string) {
	title := "Not a file of this run"
	if status == http.StatusNotFound {
		title = "No such file"
	}
	var crumbs []Crumb
	if run != "" {
		crumbs = []Crumb{{"Runs", "/runs"}, {run, "/runs/" + run}}
	}
	c.page(w, r, notFoundTmpl, Page{Title: title, ID: "nofile", Crumbs: crumbs, Status: status,
		Data: map[string]any{"Run": run, "Path": p, "Message": msg, "Status": status}})
}

var notFoundTmpl = newPage("nofile", `<p class="wait">{{.Message}}</p>
{{if .Run}}<p><a href="/runs/{{.Run}}">Back to {{.Run}}</a> and its files.</p>{{else}}<p><a href="/runs">All runs</a></p>{{end}}`)
