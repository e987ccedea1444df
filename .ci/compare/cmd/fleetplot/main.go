// SPDX-License-Identifier: MIT

// Fleetplot draws the fleet effect: the calls a recovering service gets in
// each 10ms slot after an outage, from a fleet of 1,000 clients that retry
// with full jitter (retry.Do) and from the same fleet retrying without
// jitter. Run it from .ci/compare:
//
//	go run ./cmd/fleetplot -o fleet.svg
//
// It runs the fleet tests themselves, with -fleet.series: TestFleet of the
// retry module, in virtual time, and TestFleetRealNetwork of this module,
// on loopback; then it draws one panel for each into an SVG file. The
// waits are random, so each run draws a slightly different picture.
//
//	go run ./cmd/fleetplot -check fleet.svg
//
// checks that a file is well-formed XML holding both panels, each with
// both series and the capacity line, as CI does.
package main

import (
	"encoding/csv"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

var (
	out   = flag.String("o", "fleet.svg", "the SVG file to write")
	root  = flag.String("root", "../..", "the retry module, from the directory it runs in")
	check = flag.String("check", "", "check this SVG file instead of drawing one")
)

// The series names, as the legend shows them and -check looks for them.
const (
	jitterName   = "full jitter (retry.Do)"
	noJitterName = "no jitter: waits of exactly min(Max, Base·2ⁿ)"
	capacityName = "capacity: 50 calls per slot"
)

// panels says what each panel shows, and which test makes its numbers.
var panels = []struct {
	title, dir, test string
}{
	{"Virtual time (testing/synctest, TestFleet)", "root", "^TestFleet$"},
	{"Real clock, HTTP on loopback (TestFleetRealNetwork)", ".", "^TestFleetRealNetwork$"},
}

func main() {
	flag.Parse()
	// Liberation Sans has the metrics of Arial and Helvetica, so text that
	// a viewer draws in one of those keeps the width the layout gave it.
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	var err error
	if *check != "" {
		err = checkSVG(*check)
	} else {
		err = drawFleets(*out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetplot:", err)
		os.Exit(1)
	}
}

// drawFleets runs the fleet tests and draws their series into name.
func drawFleets(name string) error {
	tmp, err := os.MkdirTemp("", "fleetplot")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var plots [][]*plot.Plot
	for i, p := range panels {
		csvFile := filepath.Join(tmp, strconv.Itoa(i)+".csv")
		dir := p.dir
		if dir == "root" {
			dir = *root
		}
		cmd := exec.Command("go", "test", "-count=1", "-run", p.test, "-fleet.series="+csvFile, ".")
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s in %s: %v\n%s", p.test, dir, err, b)
		}
		ms, series, err := readSeries(csvFile)
		if err != nil {
			return err
		}
		pl, err := panel(p.title, ms, series)
		if err != nil {
			return err
		}
		plots = append(plots, []*plot.Plot{pl})
	}
	img := vgsvg.New(9*vg.Inch, 8*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Points(36), PadY: vg.Points(24), PadX: vg.Points(8), PadBottom: vg.Points(8)}
	for i, c := range plot.Align(plots, tiles, dc) {
		plots[i][0].Draw(c[0])
	}
	heading := draw.TextStyle{Color: color.Black, Font: plot.DefaultFont, Handler: plot.DefaultTextHandler, XAlign: draw.XCenter, YAlign: draw.YTop}
	heading.Font.Size = vg.Points(12)
	dc.FillText(heading, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Points(8)},
		"1,000 clients, a 2s outage, then 50 calls per 10ms; Policy{Attempts: 1000, Base: 10ms, Max: 2s}")
	var svg strings.Builder
	if _, err := img.WriteTo(&svg); err != nil {
		return err
	}
	// A viewer without Liberation Sans draws the text in a font of the same
	// metrics, Arial or Helvetica, rather than in its default serif.
	text := strings.ReplaceAll(svg.String(), "font-family:Liberation Sans;", "font-family:Liberation Sans,Arial,Helvetica,sans-serif;")
	return os.WriteFile(name, []byte(text), 0o644)
}

// readSeries reads a CSV file that a fleet test wrote: the start of each
// slot in milliseconds, then the calls of each fleet in that slot.
func readSeries(name string) (ms []float64, series [2][]float64, err error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, series, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, series, err
	}
	if len(rows) < 2 || len(rows[0]) != 3 {
		return nil, series, fmt.Errorf("%s: want a header and rows of 3 columns", name)
	}
	for _, row := range rows[1:] {
		var v [3]float64
		for i := range v {
			if v[i], err = strconv.ParseFloat(row[i], 64); err != nil {
				return nil, series, fmt.Errorf("%s: %v", name, err)
			}
		}
		ms = append(ms, v[0])
		series[0], series[1] = append(series[0], v[1]), append(series[1], v[2])
	}
	return ms, series, nil
}

// panel draws the two series of one fleet run against time, with the
// service's capacity.
func panel(title string, ms []float64, series [2][]float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time after the outage ends (s)"
	p.Y.Label.Text = "calls the service gets per 10ms slot"
	// The legend goes at the top left, in room kept free above the data.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(12)
	last := ms[len(ms)-1]/1000 + 0.01
	top := 0.0
	for _, s := range series {
		for _, v := range s {
			top = max(top, v)
		}
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, last, 0, 1.35*top
	colors := []color.Color{color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}}
	// The un-jittered series first, so that the jittered one is drawn over
	// it; the legend names them in their own order.
	lines := make([]*plotter.Line, 2)
	for _, i := range []int{1, 0} {
		xys := make(plotter.XYs, len(ms))
		for k := range ms {
			xys[k] = plotter.XY{X: ms[k] / 1000, Y: series[i][k]}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = colors[i], vg.Points([]float64{1.5, 1}[i])
		p.Add(l)
		lines[i] = l
	}
	p.Legend.Add(jitterName, lines[0])
	p.Legend.Add(noJitterName, lines[1])
	capacity, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 50}, {X: last, Y: 50}})
	if err != nil {
		return nil, err
	}
	capacity.Color, capacity.Width, capacity.Dashes = color.Gray{Y: 0x40}, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(capacity)
	p.Legend.Add(capacityName, capacity)
	return p, nil
}

// checkSVG checks that name is well-formed XML that names both panels and,
// in each, both series and the capacity line, and holds drawn paths.
func checkSVG(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	var texts []string
	paths := 0
	for d := xml.NewDecoder(f); ; {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s is not well-formed XML: %v", name, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Local == "path" {
				paths++
			}
		case xml.CharData:
			texts = append(texts, string(tok))
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{panels[0].title, panels[1].title} {
		if !strings.Contains(all, want) {
			return fmt.Errorf("%s has no panel titled %q", name, want)
		}
	}
	for _, want := range []string{jitterName, noJitterName, capacityName} {
		if n := strings.Count(all, want); n != len(panels) {
			return fmt.Errorf("%s names %q %d times, want once in each of %d panels", name, want, n, len(panels))
		}
	}
	if paths < 6 {
		return fmt.Errorf("%s draws %d paths, want the lines of both series and the capacity in both panels", name, paths)
	}
	fmt.Printf("ok: %s is well-formed, with both panels, both series and the capacity line in each\n", name)
	return nil
}
