package vm

import (
	"embed"
	"io/fs"
)

// guestFiles holds the guest side of the harness: guest/init becomes /init,
// every other file goes to /usr/local/bin.
//
//go:embed guest
var guestFiles embed.FS

// guestFile is one embedded guest script.
type guestFile struct {
	Name string // base name
	Data []byte
}

// guestScripts returns the embedded guest files, sorted by name.
func guestScripts() ([]guestFile, error) {
	ents, err := fs.ReadDir(guestFiles, "guest")
	if err != nil {
		return nil, err
	}
	var out []guestFile
	for _, e := range ents {
		data, err := guestFiles.ReadFile("guest/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, guestFile{Name: e.Name(), Data: data})
	}
	return out, nil
}
