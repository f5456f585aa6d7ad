package driver

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
)

// Chart draws the report as horizontal bars, one group per row (numbered
// from 1 in the order of Report.Rows, the table and bench.json), one bar per
// system scaled to the row's largest value, each labelled with its value.
// The standard library has no fonts, so labels use a 3×5 digit font; the
// row names are in the table and the JSON.
func (r Report) Chart(w io.Writer) error {
	const (
		scale  = 3  // pixels per font dot
		barH   = 18 // bar height
		gap    = 10 // between groups
		left   = 60 // room for the row number
		barMax = 600
		width  = left + barMax + 140
	)
	n := len(r.Systems)
	if n == 0 {
		n = 1
	}
	height := gap + len(r.Rows)*(n*barH+gap)
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	fill(img, img.Bounds(), color.White)
	palette := []color.RGBA{{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}}
	y := gap
	for i, row := range r.Rows {
		drawText(img, fmt.Sprint(i+1), 8, y+2, scale, color.Black)
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
			drawText(img, format(v), left+wpx+6, by+2, 2, color.Black)
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
}

func drawText(img *image.RGBA, s string, x, y, scale int, c color.Color) {
	for _, ch := range s {
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
}
