package console

import (
	"fmt"
	"io/fs"
	"net/http"
)

// staticFS is what /static/ serves: the embedded stylesheet and script, files only. A
// directory is not found (404), so no request lists what the console carries.
func staticFS() http.FileSystem {
	sub, err := fs.Sub(webFS, "web/static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return filesOnly{http.FS(sub)}
}

// filesOnly is a file system whose directories do not exist: http.FileServer (which gin's
// StaticFS is) would answer a directory with a listing of its files.
type filesOnly struct{ http.FileSystem }

// Open opens name when it is a file; a directory is fs.ErrNotExist.
func (f filesOnly) Open(name string) (http.File, error) {
	file, err := f.FileSystem.Open(name)
	if err != nil {
		return nil, err
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("stat static %s: %w", name, err)
	}
	if info.IsDir() {
		file.Close()
		return nil, fmt.Errorf("static %s is a directory: %w", name, fs.ErrNotExist)
	}
	return file, nil
}
