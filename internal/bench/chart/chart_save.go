package chart

import (
	"io"
	"os"
)

// saveCanvas writes a canvas that knows how to write itself to file.
func saveCanvas(file string, c io.WriterTo) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
