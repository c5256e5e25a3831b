// Package tools owns the built-in tools an agent uses in its run folder: their
// names, the descriptions and JSON input schemas offered to the model, and
// their execution against a run folder. Every path an agent gives is resolved
// relative to the run folder and kept inside it: "..", absolute paths (other
// than those under /workspace/, where sandboxes mount the run folder) and
// symbolic links leading outside are refused, and every file operation goes
// through an os.Root so the kernel enforces the same boundary.
package tools
