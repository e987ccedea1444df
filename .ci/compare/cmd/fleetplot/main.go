// SPDX-License-Identifier: MIT

// Fleetplot draws the fleet effect: the requests a recovering service gets
// in each 10ms window after an outage, from fleets of clients that retry in
// different ways. Run it from .ci/compare:
//
//	go run ./cmd/fleetplot -o fleet.svg
//	go run ./cmd/fleetplot -figure overload -o overload.svg
//
// It runs the fleet tests themselves, each with a flag that makes it write
// its series: TestFleetVirtualTime, in virtual time, and
// TestFleetRealNetwork and TestHintedFleet, on loopback; then it draws one panel for each into an SVG file, on an opaque white
// canvas so that it reads in light and dark themes alike. The requests are
// on a logarithmic scale, so that a flat line under the capacity shows its
// shape beside peaks a hundred times higher, and each series ends in a dot
// at its last request. The waits are random, so each run draws a slightly
// different picture. The overload figure runs TestOverload and draws, on a
// linear scale, the calls that get through in each 100ms window after a
// dependency's outage, at 80% of its capacity, against the calls offered.
//
//	go run ./cmd/fleetplot -check fleet.svg
//	go run ./cmd/fleetplot -figure overload -check overload.svg
//
// checks that a file is well-formed XML on a white canvas, holding every
// panel, each with its series and its capacity line, as CI does.
package main

import (
	"encoding/csv"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
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
	figure = flag.String("figure", "fleet", "the figure to draw or check: fleet or overload")
	out    = flag.String("o", "fleet.svg", "the SVG file to write")
	check  = flag.String("check", "", "check this SVG file instead of drawing one")
)

// A panelSpec says what a panel shows, and which test makes its numbers.
type panelSpec struct {
	title    string
	test     string // the -run pattern
	flag     string // the test's flag for its CSV file
	capacity int    // requests per window the service admits
	names    []string
	goodput  bool // calls through per window on a linear scale, not requests on a logarithmic one
}

// A figureSpec is one SVG file: a heading over its panels.
type figureSpec struct {
	heading string
	panels  []panelSpec
}

var figures = map[string]figureSpec{
	"fleet": {"Requests a recovering service gets per 10ms window, on a logarithmic scale", panels},
	"overload": {"Calls through per 100ms window after a dependency's outage, at 80% of its capacity", []panelSpec{
		{"Virtual time (TestOverload): one worker, 1ms a request, stalled for 2s; 500ms a try", "^TestOverload$/^hang_2s_80%$", "-overload.series", 80,
			[]string{"retry.Do with ExampleDo_budget's bucket", "retry.Do alone", "no retry", "failsafe-go with budget.New()"}, true},
	}},
}

// The series names, as the legends show them and -check looks for them,
// in the order of each test's CSV columns.
var panels = []panelSpec{
	{"Virtual time (TestFleetVirtualTime): 1,000 clients, 2s outage, 50 calls per 10ms", "^TestFleetVirtualTime$", "-fleet.virtual.series", 50,
		[]string{"full jitter (retry.Do)", "no jitter: exactly min(MaxDelay, BaseDelay·2ⁿ⁻¹)"}, false},
	{"HTTP on loopback (TestFleetRealNetwork): the same fleet, real clock", "^TestFleetRealNetwork$", "-fleet.series", 50,
		[]string{"full jitter (retry.Do)", "no jitter: exactly min(MaxDelay, BaseDelay·2ⁿ⁻¹)"}, false},
	{"Retry-After: 1 on loopback (TestHintedFleet): 300 clients, 1s outage, 25 per 10ms", "^TestHintedFleet$/^seconds$", "-hinted.series", 25,
		[]string{"retry.Do with retry.After", "go-retryablehttp, defaults", "cenkalti/backoff, RetryAfter", "a loop that waits the hint exactly"}, false},
}

// colors are the series' colors, this package's first: blue, then red,
// orange and purple, distinct for most forms of color blindness.
var colors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// floor is where a window with no request is drawn on the logarithmic
// scale, and labelled 0.
const floor = 0.3

func main() {
	flag.Parse()
	// Liberation Sans has the metrics of Arial and Helvetica, so text that
	// a viewer draws in one of those keeps the width the layout gave it.
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	f, ok := figures[*figure]
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("-figure %q: want fleet or overload", *figure)
	case *check != "":
		err = checkSVG(*check, f)
	default:
		err = drawFleets(*out, f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetplot:", err)
		os.Exit(1)
	}
}

// drawFleets runs the tests of f's panels and draws their series into name.
func drawFleets(name string, f figureSpec) error {
	tmp, err := os.MkdirTemp("", "fleetplot")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var plots [][]*plot.Plot
	for i, p := range f.panels {
		csvFile := filepath.Join(tmp, strconv.Itoa(i)+".csv")
		cmd := exec.Command("go", "test", "-count=1", "-run", p.test, p.flag+"="+csvFile, ".")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", p.test, err, b)
		}
		ms, headers, series, err := readSeries(csvFile)
		if err != nil {
			return err
		}
		if len(series) != len(p.names) {
			return fmt.Errorf("%s wrote %d series, want %d", p.test, len(series), len(p.names))
		}
		pl, err := panel(p, ms, headers, series)
		if err != nil {
			return err
		}
		plots = append(plots, []*plot.Plot{pl})
	}
	width, height := 8*vg.Inch, 3.2*vg.Inch*vg.Length(len(plots))
	img := vgsvg.New(width, height)
	dc := draw.New(img)
	// An opaque canvas: a dark theme would show through a transparent one.
	dc.SetColor(color.White)
	dc.Fill(rectangle(0, 0, width, height))
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Points(30), PadY: vg.Points(18), PadX: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(10)}
	for i, c := range plot.Align(plots, tiles, dc) {
		plots[i][0].Draw(c[0])
	}
	heading := draw.TextStyle{Color: color.Black, Font: plot.DefaultFont, Handler: plot.DefaultTextHandler, XAlign: draw.XCenter, YAlign: draw.YTop}
	heading.Font.Size = vg.Points(12)
	dc.FillText(heading, vg.Point{X: width / 2, Y: height - vg.Points(8)}, f.heading)
	var svg strings.Builder
	if _, err := img.WriteTo(&svg); err != nil {
		return err
	}
	// A viewer without Liberation Sans draws the text in a font of the same
	// metrics, Arial or Helvetica, rather than in its default serif.
	text := strings.ReplaceAll(svg.String(), "font-family:Liberation Sans;", "font-family:Liberation Sans,Arial,Helvetica,sans-serif;")
	return os.WriteFile(name, []byte(text), 0o644)
}

// rectangle returns the path of a rectangle.
func rectangle(x0, y0, x1, y1 vg.Length) vg.Path {
	var p vg.Path
	p.Move(vg.Point{X: x0, Y: y0})
	p.Line(vg.Point{X: x1, Y: y0})
	p.Line(vg.Point{X: x1, Y: y1})
	p.Line(vg.Point{X: x0, Y: y1})
	p.Close()
	return p
}

// readSeries reads a CSV file that a fleet test wrote: a header, then one
// row per window, its start in milliseconds and the requests of each
// fleet in that window.
func readSeries(name string) (ms []float64, headers []string, series [][]float64, err error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, nil, nil, err
	}
	if len(rows) < 2 || len(rows[0]) < 2 {
		return nil, nil, nil, fmt.Errorf("%s: want a header and rows of 2 columns or more", name)
	}
	headers = rows[0][1:]
	series = make([][]float64, len(headers))
	for _, row := range rows[1:] {
		v := make([]float64, len(row))
		for i := range v {
			if v[i], err = strconv.ParseFloat(row[i], 64); err != nil {
				return nil, nil, nil, fmt.Errorf("%s: %v", name, err)
			}
		}
		ms = append(ms, v[0])
		for i := range series {
			series[i] = append(series[i], v[i+1])
		}
	}
	return ms, headers, series, nil
}

// panel draws the series of one fleet test against time, with the
// service's capacity, on a logarithmic scale of requests.
func panel(spec panelSpec, ms []float64, headers []string, series [][]float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = spec.title
	p.Title.TextStyle.Font.Size = vg.Points(10.5)
	p.X.Label.Text = "seconds after the outage ends"
	p.Y.Label.Text = "requests per 10ms"
	if spec.goodput {
		p.Y.Label.Text = "calls through per 100ms"
	}
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(9.5)
		a.Tick.Label.Font.Size = vg.Points(9.5)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(8)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.ThumbnailWidth = vg.Points(18)
	p.Legend.Padding = vg.Points(1.5)
	top, end := 0.0, 0.0
	for _, s := range series {
		for k, v := range s {
			top = max(top, v)
			if v > 0 {
				end = max(end, ms[k]/1000+0.01)
			}
		}
	}
	// Room on the right for the last dot, and above the data for the
	// legend: a decade and a half on the logarithmic scale.
	p.X.Min, p.X.Max = 0, end*1.03
	p.Y.Min, p.Y.Max = floor, math.Pow(10, math.Log10(top)+1.9)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	if spec.goodput { // every window counts, 0 included: room above for the legend
		p.X.Max = ms[len(ms)-1] / 1000 * 1.03
		p.Y.Min, p.Y.Max = 0, 2*float64(spec.capacity)
		p.Y.Scale, p.Y.Tick.Marker = plot.LinearScale{}, plot.DefaultTicks{}
	}
	// The others first, so that this package's series is drawn over them;
	// the legend names them in their own order.
	lines := make([]*plotter.Line, len(series))
	dots := make([]*plotter.Scatter, len(series))
	for i := len(series) - 1; i >= 0; i-- {
		xys := make(plotter.XYs, len(ms))
		last := 0
		for k := range ms {
			xys[k] = plotter.XY{X: ms[k] / 1000, Y: max(series[i][k], floor)}
			if spec.goodput {
				xys[k].Y, last = series[i][k], k
			} else if series[i][k] > 0 {
				last = k
			}
		}
		xys = xys[:last+1]
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = colors[i], vg.Points([]float64{1.6, 0.9, 0.9, 0.9}[i])
		if spec.goodput && i%2 == 1 { // wide, and the upper one dashed, so that two lines at 0 both show
			l.Width = vg.Points(1.6)
			if i == 1 {
				l.Dashes = []vg.Length{vg.Points(6), vg.Points(6)}
			}
		}
		dot, err := plotter.NewScatter(xys[last:])
		if err != nil {
			return nil, err
		}
		dot.Color, dot.Shape, dot.Radius = colors[i], draw.CircleGlyph{}, vg.Points(3)
		p.Add(l, dot)
		lines[i], dots[i] = l, dot
	}
	for i, name := range spec.names {
		through := ""
		if _, after, ok := strings.Cut(headers[i], ": "); ok {
			through = ", " + after // how many clients got through
		}
		if spec.goodput {
			p.Legend.Add(name+through, lines[i], dots[i]) // when it recovers
			continue
		}
		lastAt := xysEnd(lines[i])
		p.Legend.Add(fmt.Sprintf("%s%s, last request at %.1fs", name, through, lastAt), lines[i], dots[i])
	}
	capacity, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(spec.capacity)}, {X: p.X.Max, Y: float64(spec.capacity)}})
	if err != nil {
		return nil, err
	}
	capacity.Color, capacity.Width, capacity.Dashes = color.Gray{Y: 0x40}, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(capacity)
	p.Legend.Add(capacityName(spec), capacity)
	return p, nil
}

// capacityName is the legend entry of a capacity line: the calls offered,
// for a goodput panel.
func capacityName(spec panelSpec) string {
	if spec.goodput {
		return fmt.Sprintf("calls offered, %d per 100ms", spec.capacity)
	}
	return fmt.Sprintf("the service's capacity, %d per 10ms", spec.capacity)
}

// xysEnd returns the time of a line's last point.
func xysEnd(l *plotter.Line) float64 { return l.XYs[len(l.XYs)-1].X }

// logTicks marks the powers of ten from 1 up to the data, and the floor as 0.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	ticks := []plot.Tick{{Value: floor, Label: "0"}}
	for v := 1.0; v <= max/50; v *= 10 {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return ticks
}

// checkSVG checks that name is well-formed XML on a white canvas that names
// every panel of f and, in each, its series and its capacity line, and
// holds drawn paths.
func checkSVG(name string, fig figureSpec) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	var texts []string
	paths, whiteCanvas := 0, false
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
			if tok.Name.Local != "path" {
				continue
			}
			if paths == 0 {
				whiteCanvas = canvasFill(tok)
			}
			paths++
		case xml.CharData:
			texts = append(texts, string(tok))
		}
	}
	if !whiteCanvas {
		return fmt.Errorf("%s does not start with a white rectangle over its whole canvas", name)
	}
	all := strings.Join(texts, "\n")
	for _, p := range fig.panels {
		if !strings.Contains(all, p.title) {
			return fmt.Errorf("%s has no panel titled %q", name, p.title)
		}
		for _, want := range append(p.names, capacityName(p)) {
			if !strings.Contains(all, want) {
				return fmt.Errorf("%s names no %q, in the panel %q", name, want, p.title)
			}
		}
	}
	if paths < 3*len(fig.panels) {
		return fmt.Errorf("%s draws %d paths, want the lines of every series and capacity", name, paths)
	}
	fmt.Printf("ok: %s is well-formed, on a white canvas, with every panel, its series and its capacity line\n", name)
	return nil
}

// canvasFill reports whether a path element fills the whole canvas white.
func canvasFill(path xml.StartElement) bool {
	var d, style string
	for _, a := range path.Attr {
		switch a.Name.Local {
		case "d":
			d = a.Value
		case "style":
			style = a.Value
		}
	}
	return strings.Contains(style, "fill:#FFFFFF") && strings.HasPrefix(d, "M0,0L")
}
