package driver

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"strings"
)

// Chart draws the report as horizontal bars: a legend naming the systems,
// then one group per row (Report.Rows order, as in the table and
// bench.json) under its name, unit and ratio, one bar per system scaled to
// the row's largest value and labelled with it. The standard library has
// no fonts, so text uses a 3×5 upper-case font.
func (r Report) Chart(w io.Writer) error {
	const (
		barH   = 16 // bar height
		labelH = 16 // row name line
		gap    = 10 // between groups
		left   = 12
		barMax = 640
		width  = left + barMax + 140
		legend = 30
	)
	n := len(r.Systems)
	if n == 0 {
		n = 1
	}
	height := legend + gap + len(r.Rows)*(labelH+n*barH+gap)
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	fill(img, img.Bounds(), color.White)
	palette := []color.RGBA{{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}}
	x := left
	for k, name := range r.Systems {
		fill(img, image.Rect(x, 10, x+14, 24), palette[k%len(palette)])
		x += 20
		x = drawText(img, name, x, 10, 3, color.Black) + 24
	}
	y := legend + gap
	for _, row := range r.Rows {
		label := fmt.Sprintf("%s, %s", row.Name, row.Unit)
		if row.Ratio > 0 && len(r.Systems) == 2 {
			label += fmt.Sprintf(": %s better by %.1fx", r.Systems[0], row.Ratio)
		}
		drawText(img, label, left, y+2, 2, color.Black)
		y += labelH
		top := 0.0
		for _, v := range row.Values {
			top = max(top, v)
		}
		for k, v := range row.Values {
			wpx := 1
			if top > 0 {
				wpx = max(1, int(v/top*barMax))
			}
			by := y + k*barH
			fill(img, image.Rect(left, by+2, left+wpx, by+barH-2), palette[k%len(palette)])
			drawText(img, format(v), left+wpx+6, by+3, 2, color.Black)
		}
		y += n*barH + gap
	}
	return png.Encode(w, img)
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.Set(x, y, c)
		}
	}
}

// glyphs are 3×5 bitmaps, one row per string, '#' set.
var glyphs = map[rune][5]string{
	'0': {"###", "#.#", "#.#", "#.#", "###"},
	'1': {".#.", "##.", ".#.", ".#.", "###"},
	'2': {"###", "..#", "###", "#..", "###"},
	'3': {"###", "..#", "###", "..#", "###"},
	'4': {"#.#", "#.#", "###", "..#", "..#"},
	'5': {"###", "#..", "###", "..#", "###"},
	'6': {"###", "#..", "###", "#.#", "###"},
	'7': {"###", "..#", "..#", "..#", "..#"},
	'8': {"###", "#.#", "###", "#.#", "###"},
	'9': {"###", "#.#", "###", "..#", "###"},
	'.': {"...", "...", "...", "...", ".#."},
	'-': {"...", "...", "###", "...", "..."},
	',': {"...", "...", "...", ".#.", "#.."},
	':': {"...", ".#.", "...", ".#.", "..."},
	'/': {"..#", "..#", ".#.", "#..", "#.."},
	'(': {".#.", "#..", "#..", "#..", ".#."},
	')': {".#.", "..#", "..#", "..#", ".#."},
	'%': {"#.#", "..#", ".#.", "#..", "#.#"},
	'A': {".#.", "#.#", "###", "#.#", "#.#"},
	'B': {"##.", "#.#", "##.", "#.#", "##."},
	'C': {".##", "#..", "#..", "#..", ".##"},
	'D': {"##.", "#.#", "#.#", "#.#", "##."},
	'E': {"###", "#..", "##.", "#..", "###"},
	'F': {"###", "#..", "##.", "#..", "#.."},
	'G': {".##", "#..", "#.#", "#.#", ".##"},
	'H': {"#.#", "#.#", "###", "#.#", "#.#"},
	'I': {"###", ".#.", ".#.", ".#.", "###"},
	'J': {"..#", "..#", "..#", "#.#", ".#."},
	'K': {"#.#", "#.#", "##.", "#.#", "#.#"},
	'L': {"#..", "#..", "#..", "#..", "###"},
	'M': {"#.#", "###", "###", "#.#", "#.#"},
	'N': {"##.", "#.#", "#.#", "#.#", "#.#"},
	'O': {".#.", "#.#", "#.#", "#.#", ".#."},
	'P': {"##.", "#.#", "##.", "#..", "#.."},
	'Q': {".#.", "#.#", "#.#", "##.", ".##"},
	'R': {"##.", "#.#", "##.", "#.#", "#.#"},
	'S': {".##", "#..", ".#.", "..#", "##."},
	'T': {"###", ".#.", ".#.", ".#.", ".#."},
	'U': {"#.#", "#.#", "#.#", "#.#", "###"},
	'V': {"#.#", "#.#", "#.#", "#.#", ".#."},
	'W': {"#.#", "#.#", "###", "###", "#.#"},
	'X': {"#.#", "#.#", ".#.", "#.#", "#.#"},
	'Y': {"#.#", "#.#", ".#.", ".#.", ".#."},
	'Z': {"###", "..#", ".#.", "#..", "###"},
}

// drawText writes s (upper-cased; unknown runes leave a space) and returns
// the x after it.
func drawText(img *image.RGBA, s string, x, y, scale int, c color.Color) int {
	for _, ch := range strings.ToUpper(s) {
		g, ok := glyphs[ch]
		if ok {
			for gy, line := range g {
				for gx, dot := range line {
					if dot == '#' {
						fill(img, image.Rect(x+gx*scale, y+gy*scale, x+(gx+1)*scale, y+(gy+1)*scale), c)
					}
				}
			}
		}
		x += 4 * scale
	}
	return x
}
