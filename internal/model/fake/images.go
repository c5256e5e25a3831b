package fake

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/gif" // registered for image.DecodeConfig: the formats the vendors take that the standard library reads
	_ "image/jpeg"
	_ "image/png"
	"strings"
)

// imageInfo is what the server reads of one image in a request: its declared media type and the size
// its data decodes to.
type imageInfo struct {
	mediaType     string
	width, height int
}

// imageError is a request whose image the server cannot read. Like the real vendors, the server
// answers it with 400 (Anthropic invalid_request_error; OpenAI code invalid_image_format).
type imageError struct{ msg string }

func (e *imageError) Error() string { return e.msg }

// imageFormats maps the media types the server decodes to image.DecodeConfig's format names.
var imageFormats = map[string]string{"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif"}

// decodeImage checks base64 image data against its declared media type and reads its size. where
// names the image in errors (a path into the request, as the vendors give).
func decodeImage(where, mediaType, data string) (imageInfo, error) {
	format, ok := imageFormats[mediaType]
	if !ok {
		return imageInfo{}, &imageError{fmt.Sprintf("%s: media type %q is not supported by the fake model server (image/png, image/jpeg, image/gif)", where, mediaType)}
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return imageInfo{}, &imageError{fmt.Sprintf("%s: invalid base64 data: %v", where, err)}
	}
	cfg, got, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		return imageInfo{}, &imageError{fmt.Sprintf("%s: could not process image: %v", where, err)}
	}
	if got != format {
		return imageInfo{}, &imageError{fmt.Sprintf("%s: image does not match the provided media type %s (the data is %s)", where, mediaType, got)}
	}
	return imageInfo{mediaType: mediaType, width: cfg.Width, height: cfg.Height}, nil
}

// decodeDataURL reads an OpenAI image_url, which the server takes only as a base64 data URL
// ("data:image/png;base64,..."): it fetches nothing.
func decodeDataURL(where, url string) (imageInfo, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return imageInfo{}, &imageError{fmt.Sprintf("%s: the fake model server takes images only as data: URLs (it fetches nothing), got %q", where, clip(url, 40))}
	}
	meta, data, ok := strings.Cut(rest, ",")
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isBase64 {
		return imageInfo{}, &imageError{fmt.Sprintf("%s: invalid image data URL: want data:<media type>;base64,<data>", where)}
	}
	return decodeImage(where, mediaType, data)
}

// imageTokens estimates an image's input tokens as Anthropic documents it (width × height / 750), so
// screenshots weigh on the default input estimate as they would on a real bill.
func imageTokens(im imageInfo) int { return im.width * im.height / 750 }

// describeImages renders {{last_tool_images}}: "no images", "1 image: image/png 1280x800",
// "2 images: image/png 1280x800, image/jpeg 640x480".
func describeImages(ims []imageInfo) string {
	if len(ims) == 0 {
		return "no images"
	}
	parts := make([]string, len(ims))
	for i, im := range ims {
		parts[i] = fmt.Sprintf("%s %dx%d", im.mediaType, im.width, im.height)
	}
	noun := "images"
	if len(ims) == 1 {
		noun = "image"
	}
	return fmt.Sprintf("%d %s: %s", len(ims), noun, strings.Join(parts, ", "))
}
