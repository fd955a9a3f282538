package main

import (
	"fmt"
	"image/color"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// chartColors tell the inline settings apart.
var chartColors = []color.Color{
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// chartPanels are the chart's rows: the kernel client's READ and WRITE
// against rdma-nfsd, at the deepest depth measured.
var chartPanels = []string{WorkRead, WorkWrite}

// drawChart draws, for READ and WRITE of the kernel client against
// rdma-nfsd at the largest depth measured, ops/s and RDMA operations per
// RPC against I/O size, one line per inline setting, to file (.png or
// .svg).
func drawChart(file string, rep Report) error {
	depth := 0
	for _, r := range rep.Results {
		if r.Client == ClientKernel && r.Server == ServerGo && r.Err == "" {
			depth = max(depth, r.InFlight)
		}
	}
	if depth == 0 {
		return fmt.Errorf("no READ or WRITE of the kernel client against rdma-nfsd to draw (the soft provider runs NULL only)")
	}
	rows := len(chartPanels)
	plots := make([][]*plot.Plot, rows)
	for i, w := range chartPanels {
		plots[i] = make([]*plot.Plot, 2)
		for j, metric := range []string{"ops/s", "RDMA operations per RPC"} {
			p := plot.New()
			p.Title.Text = fmt.Sprintf("%s, kernel client → rdma-nfsd, %d in flight", strings.ToUpper(w), depth)
			p.X.Label.Text = "I/O size (bytes, log scale)"
			p.Y.Label.Text = metric
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = sizeTicks{}
			p.Legend.Top = true
			if j == 1 {
				// 2 or 3 operations below 64 KiB, ~18 at 1 MiB: a log
				// scale keeps the difference a chunk makes visible.
				p.Y.Scale = plot.LogScale{}
				p.Y.Tick.Marker = plot.ConstantTicks{{Value: 2, Label: "2"}, {Value: 3, Label: "3"}, {Value: 4, Label: "4"},
					{Value: 6, Label: "6"}, {Value: 10, Label: "10"}, {Value: 20, Label: "20"}}
				p.Legend.Left = true
			}
			byInline := map[int]plotter.XYs{}
			for _, r := range rep.Results {
				if r.Client != ClientKernel || r.Server != ServerGo || r.Workload != w || r.InFlight != depth || r.Err != "" {
					continue
				}
				y := r.OpsPerS
				if j == 1 {
					y = rdmaOps(r)
				}
				if y == NA {
					continue
				}
				byInline[r.Inline] = append(byInline[r.Inline], plotter.XY{X: float64(r.Size), Y: y})
			}
			var inlines []int
			for in := range byInline {
				inlines = append(inlines, in)
			}
			sort.Ints(inlines)
			for k, in := range inlines {
				xys := byInline[in]
				sort.Slice(xys, func(a, b int) bool { return xys[a].X < xys[b].X })
				l, pts, err := plotter.NewLinePoints(xys)
				if err != nil {
					return err
				}
				c := chartColors[k%len(chartColors)]
				l.Color, pts.Color = c, c
				l.Width = vg.Points(1.5)
				p.Add(l, pts)
				p.Legend.Add("inline "+sizeName(in), l, pts)
			}
			p.Add(plotter.NewGrid())
			plots[i][j] = p
		}
	}
	width, height := 28*vg.Centimeter, vg.Length(rows)*10*vg.Centimeter
	var c draw.Canvas
	var save func() error
	switch strings.ToLower(filepath.Ext(file)) {
	case ".svg":
		cv := vgsvg.New(width, height)
		c = draw.New(cv)
		save = func() error { return saveCanvas(file, cv) }
	case ".png":
		cv := vgimg.New(width, height)
		c = draw.New(cv)
		save = func() error { return saveCanvas(file, vgimg.PngCanvas{Canvas: cv}) }
	default:
		return fmt.Errorf("%s: want a .png or .svg file", file)
	}
	tiles := draw.Tiles{Rows: rows, Cols: 2, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, c)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(canvases[i][j])
		}
	}
	return save()
}

// sizeTicks labels the I/O size axis at powers of two.
type sizeTicks struct{}

func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for v := 256.0; v <= hi*1.01; v *= 2 {
		if v >= lo*0.99 {
			label := ""
			if n := int(v); n == 512 || n == 2048 || n == 8192 || n == 65536 || n == 1<<20 || n == 1024 || n == 4096 {
				label = strings.ReplaceAll(sizeName(n), " ", "")
			}
			ts = append(ts, plot.Tick{Value: v, Label: label})
		}
	}
	return ts
}
