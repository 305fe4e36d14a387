package providersim

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"math"
)

const (
	defaultEmbeddingDims = 8
	// maxEmbeddingDims is the largest size the real APIs offer
	// (text-embedding-3-large, gemini-embedding-001).
	maxEmbeddingDims = 3072
)

// embed returns a deterministic unit vector for text: the same text always
// gets the same vector, different texts almost surely different ones.
func embed(text string, dims int) []float32 {
	if dims <= 0 {
		dims = defaultEmbeddingDims
	}
	h := fnv.New64a()
	h.Write([]byte(text))
	state := h.Sum64()
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		state = splitmix64(state)
		x := float64(state>>11)/float64(1<<53)*2 - 1
		v[i] = float32(x)
		norm += x * x
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		return v
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// base64Floats encodes v the way OpenAI's encoding_format "base64" does:
// little-endian float32 bytes.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}
