package xdesktop

import (
	"encoding/binary"
	"image/color"
	"strings"
	"testing"
)

// xwdFile makes an XWD file of a w×h ZPixmap of 32 bits per pixel in the pixel byte order
// msb, its header in hdr's byte order, with the given masks and ncolors colour entries.
func xwdFile(hdr binary.AppendByteOrder, msb bool, w, h int, masks [3]uint32, ncolors int, pixel func(x, y int) uint32) []byte {
	name := "xwdump\x00"
	stride := w*4 + 8 // padded lines
	words := [25]uint32{uint32(100 + len(name)), 7, 2, 24, uint32(w), uint32(h), 0, 0, 32, 0, 32, 32, uint32(stride), 4,
		masks[0], masks[1], masks[2], 8, 256, uint32(ncolors), uint32(w), uint32(h), 0, 0, 0}
	if msb {
		words[7] = 1
	}
	var b []byte
	for _, v := range words {
		b = hdr.AppendUint32(b, v)
	}
	b = append(b, name...)
	b = append(b, make([]byte, ncolors*12)...)
	var px binary.ByteOrder = binary.LittleEndian
	if msb {
		px = binary.BigEndian
	}
	for y := 0; y < h; y++ {
		line := make([]byte, stride)
		for x := 0; x < w; x++ {
			px.PutUint32(line[x*4:], pixel(x, y))
		}
		b = append(b, line...)
	}
	return b
}

func TestDecodeXWD(t *testing.T) {
	rgb := [3]uint32{0xff0000, 0x00ff00, 0x0000ff}
	pix := func(x, y int) uint32 { return uint32(x*40)<<16 | uint32(y*50)<<8 | 0x7f }
	for _, c := range []struct {
		name string
		hdr  binary.AppendByteOrder
		msb  bool
	}{{"big-endian header, LSBFirst pixels", binary.BigEndian, false}, {"big-endian header, MSBFirst pixels", binary.BigEndian, true},
		{"little-endian header", binary.LittleEndian, false}} {
		img, err := decodeXWD(xwdFile(c.hdr, c.msb, 5, 3, rgb, 256, pix))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if img.Rect.Dx() != 5 || img.Rect.Dy() != 3 {
			t.Fatalf("%s: %v", c.name, img.Rect)
		}
		for y := 0; y < 3; y++ {
			for x := 0; x < 5; x++ {
				want := color.RGBA{uint8(x * 40), uint8(y * 50), 0x7f, 0xff}
				if got := img.RGBAAt(x, y); got != want {
					t.Fatalf("%s: pixel (%d, %d) = %v, want %v", c.name, x, y, got, want)
				}
			}
		}
	}
	// BGR masks.
	img, err := decodeXWD(xwdFile(binary.BigEndian, false, 2, 1, [3]uint32{0xff, 0xff00, 0xff0000}, 0, func(x, y int) uint32 { return 0x0000ff }))
	if err != nil || img.RGBAAt(0, 0) != (color.RGBA{0xff, 0, 0, 0xff}) {
		t.Fatalf("BGR: %v %v", err, img)
	}
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"short", []byte("hello"), "shorter than the header"},
		{"not xwd", make([]byte, 200), "not an XWD file"},
		{"truncated colours", xwdFile(binary.BigEndian, false, 5, 3, rgb, 256, pix)[:400], "run past the end"},
		{"truncated pixels", xwdFile(binary.BigEndian, false, 5, 3, rgb, 256, pix)[:3179+50], "needed"},
		{"overlapping masks", xwdFile(binary.BigEndian, false, 2, 2, [3]uint32{0xff00, 0xff00, 0xff}, 0, pix), "overlap"},
		{"scattered mask", xwdFile(binary.BigEndian, false, 2, 2, [3]uint32{0xf0f000, 0xff00, 0xff}, 0, pix), "runs of bits"},
	} {
		if _, err := decodeXWD(c.file); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	// A PseudoColor screen is refused, saying why.
	f := xwdFile(binary.BigEndian, false, 2, 2, rgb, 0, pix)
	binary.BigEndian.PutUint32(f[13*4:], 3)
	if _, err := decodeXWD(f); err == nil || !strings.Contains(err.Error(), "visual class 3") {
		t.Errorf("PseudoColor: %v", err)
	}
}
