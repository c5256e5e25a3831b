package xdesktop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"math/bits"
)

// A desktop's screen is captured with `xwd -root -silent` (package x11-apps) and decoded here:
// the XWD file format (X11's XWDFile.h), as much of it as a TrueColor or DirectColor screen of
// 24 or 32 bits per pixel in ZPixmap needs.
//
// The file is a header of 25 32-bit fields (written most significant byte first by xwd; a
// header in the other order is read too, told apart by its version field), the window's name
// (to header_size), ncolors colour entries of 12 bytes, then height lines of bytes_per_line
// bytes, whose pixels are in the image's byte_order.

const (
	xwdVersion     = 7
	xwdHeaderWords = 25
	xwdZPixmap     = 2
	xwdTrueColor   = 4
	xwdDirectColor = 5
	xwdColorSize   = 12
)

// xwdHeader is the file header, by field.
type xwdHeader struct {
	HeaderSize, FileVersion, PixmapFormat, PixmapDepth, PixmapWidth, PixmapHeight, XOffset,
	ByteOrder, BitmapUnit, BitmapBitOrder, BitmapPad, BitsPerPixel, BytesPerLine, VisualClass,
	RedMask, GreenMask, BlueMask, BitsPerRGB, ColormapEntries, NColors, WindowWidth, WindowHeight,
	WindowX, WindowY, WindowBorderWidth uint32
}

// decodeXWD decodes a screen captured by xwd into an opaque RGBA image.
func decodeXWD(b []byte) (*image.RGBA, error) {
	if len(b) < xwdHeaderWords*4 {
		return nil, fmt.Errorf("xwd: %d bytes is shorter than the header", len(b))
	}
	var order binary.ByteOrder = binary.BigEndian
	if order.Uint32(b[4:]) != xwdVersion {
		order = binary.LittleEndian
		if order.Uint32(b[4:]) != xwdVersion {
			return nil, fmt.Errorf("xwd: not an XWD file of version %d", xwdVersion)
		}
	}
	var w [xwdHeaderWords]uint32
	for i := range w {
		w[i] = order.Uint32(b[i*4:])
	}
	h := xwdHeader{w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12], w[13],
		w[14], w[15], w[16], w[17], w[18], w[19], w[20], w[21], w[22], w[23], w[24]}

	switch {
	case h.PixmapFormat != xwdZPixmap:
		return nil, fmt.Errorf("xwd: pixmap format %d, only ZPixmap (%d) is read", h.PixmapFormat, xwdZPixmap)
	case h.VisualClass != xwdTrueColor && h.VisualClass != xwdDirectColor:
		return nil, fmt.Errorf("xwd: visual class %d, only TrueColor (%d) and DirectColor (%d) are read (start Xvfb with a depth of 24)",
			h.VisualClass, xwdTrueColor, xwdDirectColor)
	case h.BitsPerPixel != 32 && h.BitsPerPixel != 24:
		return nil, fmt.Errorf("xwd: %d bits per pixel, only 24 and 32 are read", h.BitsPerPixel)
	case h.PixmapDepth < 24 || h.PixmapDepth > h.BitsPerPixel:
		return nil, fmt.Errorf("xwd: depth %d with %d bits per pixel, only depth 24 (or 32) is read", h.PixmapDepth, h.BitsPerPixel)
	case h.ByteOrder > 1:
		return nil, fmt.Errorf("xwd: byte order %d is neither LSBFirst (0) nor MSBFirst (1)", h.ByteOrder)
	case h.PixmapWidth == 0 || h.PixmapHeight == 0 || h.PixmapWidth > 1<<15 || h.PixmapHeight > 1<<15:
		return nil, fmt.Errorf("xwd: %d×%d pixels is not a screen", h.PixmapWidth, h.PixmapHeight)
	}
	masks := [3]uint32{h.RedMask, h.GreenMask, h.BlueMask}
	var shift, width [3]int
	for i, m := range masks {
		if m == 0 || (m>>bits.TrailingZeros32(m))&((m>>bits.TrailingZeros32(m))+1) != 0 {
			return nil, fmt.Errorf("xwd: colour masks %#x, %#x, %#x are not three runs of bits", h.RedMask, h.GreenMask, h.BlueMask)
		}
		shift[i] = bits.TrailingZeros32(m)
		width[i] = bits.OnesCount32(m)
		if width[i] > 16 || shift[i]+width[i] > int(h.BitsPerPixel) {
			return nil, fmt.Errorf("xwd: colour mask %#x does not fit %d bits per pixel", m, h.BitsPerPixel)
		}
	}
	if masks[0]&masks[1] != 0 || masks[0]&masks[2] != 0 || masks[1]&masks[2] != 0 {
		return nil, fmt.Errorf("xwd: colour masks %#x, %#x, %#x overlap", h.RedMask, h.GreenMask, h.BlueMask)
	}
	wd, ht := int(h.PixmapWidth), int(h.PixmapHeight)
	bpp := int(h.BitsPerPixel) / 8
	stride := int(h.BytesPerLine)
	if stride < wd*bpp {
		return nil, fmt.Errorf("xwd: %d bytes per line is short of %d pixels of %d bytes", stride, wd, bpp)
	}
	start := int64(h.HeaderSize) + int64(h.NColors)*xwdColorSize
	if h.HeaderSize < xwdHeaderWords*4 || start > int64(len(b)) {
		return nil, errors.New("xwd: the header and colours run past the end of the file")
	}
	if need := start + int64(stride)*int64(ht); need > int64(len(b)) {
		return nil, fmt.Errorf("xwd: %d bytes, %d needed for %d lines of %d bytes", len(b), need, ht, stride)
	}
	data := b[start:]
	img := image.NewRGBA(image.Rect(0, 0, wd, ht))
	msb := h.ByteOrder == 1
	for y := 0; y < ht; y++ {
		line := data[y*stride:]
		out := img.Pix[y*img.Stride:]
		for x := 0; x < wd; x++ {
			p := line[x*bpp : x*bpp+bpp]
			var v uint32
			switch {
			case bpp == 4 && msb:
				v = binary.BigEndian.Uint32(p)
			case bpp == 4:
				v = binary.LittleEndian.Uint32(p)
			case msb:
				v = uint32(p[0])<<16 | uint32(p[1])<<8 | uint32(p[2])
			default:
				v = uint32(p[2])<<16 | uint32(p[1])<<8 | uint32(p[0])
			}
			o := out[x*4 : x*4+4]
			for i := 0; i < 3; i++ {
				o[i] = scale8((v&masks[i])>>shift[i], width[i])
			}
			o[3] = 0xff
		}
	}
	return img, nil
}

// scale8 scales a colour component of n bits to 8.
func scale8(c uint32, n int) uint8 {
	switch {
	case n == 8:
		return uint8(c)
	case n > 8:
		return uint8(c >> (n - 8))
	}
	return uint8(c * 255 / (1<<n - 1))
}
