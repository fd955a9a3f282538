// Package chart draws a bench report (package bench) with gonum/plot: ops/s
// and RDMA operations per RPC against I/O size, one panel per client →
// server pair. It is the only package of the module that imports gonum.
package chart

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/go-rpcrdma/rpcrdma/internal/bench"
)

// chartColors tell the inline settings apart.
var chartColors = []color.Color{
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// chartRows are the chart's rows: READ and WRITE.
var chartRows = []string{bench.WorkRead, bench.WorkWrite}

// chartPeer is one client → server pair of a report: one column of the
// chart.
type chartPeer struct {
	client, server string
	depth          int // the deepest depth the report measured for it
}

func (p chartPeer) String() string { return p.client + " client → " + p.server }

// chartPeerOrder is the columns' order: our server with each client, then
// knfsd over RDMA, then knfsd over TCP.
func chartPeerOrder(p chartPeer) int {
	return bench.ServerRank(p.server)*2 + map[bool]int{true: 0, false: 1}[p.client == bench.ClientKernel]
}

// chartPeers lists the pairs that have READ or WRITE results, in column
// order, each with its deepest depth.
func chartPeers(rep bench.Report) []chartPeer {
	depth := map[[2]string]int{}
	for _, r := range rep.Results {
		if r.Err == "" && (r.Workload == bench.WorkRead || r.Workload == bench.WorkWrite) {
			k := [2]string{r.Client, r.Server}
			depth[k] = max(depth[k], r.InFlight)
		}
	}
	var peers []chartPeer
	for k, d := range depth {
		peers = append(peers, chartPeer{client: k[0], server: k[1], depth: d})
	}
	sort.Slice(peers, func(i, j int) bool { return chartPeerOrder(peers[i]) < chartPeerOrder(peers[j]) })
	return peers
}

// chartLines returns, for one panel, the points of each inline setting:
// metric (ops/s, or RDMA operations per RPC) against I/O size.
func chartLines(rep bench.Report, peer chartPeer, work string, rdma bool) map[int]plotter.XYs {
	lines := map[int]plotter.XYs{}
	for _, r := range rep.Results {
		if r.Client != peer.client || r.Server != peer.server || r.Workload != work || r.InFlight != peer.depth || r.Err != "" {
			continue
		}
		y := r.OpsPerS
		if rdma {
			y = bench.RDMAOps(r)
		}
		if y == bench.NA || y <= 0 {
			continue
		}
		lines[r.Inline] = append(lines[r.Inline], plotter.XY{X: float64(r.Size), Y: y})
	}
	return lines
}

// Draw draws, for READ and WRITE, one panel of ops/s against I/O
// size per client → server pair of the report (at the deepest depth
// measured for it), one line per inline setting with the same colour in
// every panel and the same ops/s scale along a row, and a last panel of
// RDMA operations per RPC for the first pair whose operations were
// counted (our server's or our client's). It writes file (.png or .svg).
func Draw(file string, rep bench.Report) error {
	peers := chartPeers(rep)
	if len(peers) == 0 {
		return fmt.Errorf("no READ or WRITE results to draw (the soft provider runs NULL only)")
	}
	// The inline settings of the whole report pick the colours, so that a
	// setting looks the same in every panel.
	inlineSet := map[int]bool{}
	for _, r := range rep.Results {
		if r.Inline > 0 { // 0: over TCP, drawn in grey
			inlineSet[r.Inline] = true
		}
	}
	var inlines []int
	for in := range inlineSet {
		inlines = append(inlines, in)
	}
	sort.Ints(inlines)
	colour := map[int]color.Color{0: color.Gray{Y: 0x60}}
	for k, in := range inlines {
		colour[in] = chartColors[k%len(chartColors)]
	}
	// Every panel gets the whole report's sizes, and a range on both log
	// axes even when it has no points (a pair that ran READ only).
	minSize, maxSize := math.Inf(1), 0.0
	for _, r := range rep.Results {
		if r.Err == "" && (r.Workload == bench.WorkRead || r.Workload == bench.WorkWrite) && r.Size > 0 {
			minSize, maxSize = min(minSize, float64(r.Size)), max(maxSize, float64(r.Size))
		}
	}
	counted := -1
	for i, p := range peers {
		if len(chartLines(rep, p, bench.WorkRead, true))+len(chartLines(rep, p, bench.WorkWrite, true)) > 0 {
			counted = i
			break
		}
	}
	cols := len(peers)
	if counted >= 0 {
		cols++
	}
	rows := len(chartRows)
	plots := make([][]*plot.Plot, rows)
	for i, w := range chartRows {
		plots[i] = make([]*plot.Plot, cols)
		minOps, maxOps, maxRDMA := math.Inf(1), 0.0, 0.0
		for j := range cols {
			rdma := j == len(peers)
			peer := peers[min(j, len(peers)-1)]
			if rdma {
				peer = peers[counted]
			}
			p := plot.New()
			p.Title.Text = fmt.Sprintf("%s, %s, %d in flight", strings.ToUpper(w), peer, peer.depth)
			p.X.Label.Text = "I/O size (bytes, log scale)"
			p.Y.Label.Text = "ops/s (log scale)"
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = sizeTicks{}
			p.X.Min, p.X.Max = minSize/1.2, maxSize*1.2
			p.Y.Min, p.Y.Max = 1, 10
			p.Legend.Top = true
			if rdma {
				// 2 or 3 operations below 64 KiB, ~18 at 1 MiB: a log
				// scale keeps the difference a chunk makes visible.
				p.Y.Label.Text = "RDMA operations per RPC"
				p.Y.Scale = plot.LogScale{}
				p.Y.Tick.Marker = plot.ConstantTicks{{Value: 2, Label: "2"}, {Value: 3, Label: "3"}, {Value: 4, Label: "4"},
					{Value: 6, Label: "6"}, {Value: 10, Label: "10"}, {Value: 20, Label: "20"}}
				p.Legend.Left = true
			}
			lines := chartLines(rep, peer, w, rdma)
			var ins []int
			for in := range lines {
				ins = append(ins, in)
			}
			sort.Ints(ins)
			for _, in := range ins {
				xys := lines[in]
				sort.Slice(xys, func(a, b int) bool { return xys[a].X < xys[b].X })
				l, pts, err := plotter.NewLinePoints(xys)
				if err != nil {
					return err
				}
				c := colour[in]
				l.Color, pts.Color = c, c
				l.Width = vg.Points(1.5)
				p.Add(l, pts)
				name := "inline " + bench.SizeName(in)
				if in == 0 {
					name = "TCP (no inline setting)"
				}
				p.Legend.Add(name, l, pts)
				for _, xy := range xys {
					if rdma {
						maxRDMA = max(maxRDMA, xy.Y)
					} else {
						minOps, maxOps = min(minOps, xy.Y), max(maxOps, xy.Y)
					}
				}
			}
			p.Add(plotter.NewGrid())
			plots[i][j] = p
		}
		// One ops/s scale along the row, so that the pairs compare by
		// eye (log: the peers differ tenfold); the legend's room on top.
		if maxOps > 0 {
			for j := range peers {
				plots[i][j].Y.Min, plots[i][j].Y.Max = minOps/1.5, maxOps*4
			}
		}
		if maxRDMA > 0 {
			plots[i][len(peers)].Y.Min, plots[i][len(peers)].Y.Max = 1.8, maxRDMA*2.5
		}
	}
	width, height := vg.Length(cols)*12*vg.Centimeter, vg.Length(rows)*10*vg.Centimeter
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
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
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
			n := int(v)
			sparse := n == 512 || n == 2048 || n == 8192 || n == 65536 || n == 1<<20
			// Over a wide range (512 B to 1 MiB) 1 and 4 KiB would
			// crowd their neighbours' labels.
			if sparse || (hi/lo < 256 && (n == 1024 || n == 4096)) {
				label = strings.ReplaceAll(bench.SizeName(n), " ", "")
			}
			ts = append(ts, plot.Tick{Value: v, Label: label})
		}
	}
	return ts
}
