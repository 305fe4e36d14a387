package complexity

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// matcher finds every marker in one pass over the text (Aho–Corasick,
// compiled to a dense automaton over byte classes), so the cost of a
// decision grows with the prompt, not with the number of markers.
type matcher struct {
	class   [256]uint8 // byte → column; 0 is "no marker contains this byte"
	classes int
	next    []uint16 // state*classes + class → state
	out     [][]uint16
	hasOut  []bool // out[s] is non-empty; checked per byte, so kept dense
	markers []marker
}

// marker is one phrase to count. Phrases that start (end) with an ASCII
// letter match only at a word start (end), so "prove" does not fire in
// "improve"; a trailing '*' in the source table lifts the end check.
type marker struct {
	group     group
	length    int
	wordStart bool
	wordEnd   bool
}

func newMatcher(table []markerSpec) *matcher {
	m := &matcher{}
	var used [256]bool
	patterns := make([]string, 0, len(table))
	for _, spec := range table {
		p := spec.text
		mk := marker{group: spec.group}
		if n := len(p); n > 0 && p[n-1] == '*' {
			p = p[:n-1]
		} else {
			mk.wordEnd = isASCIILetter(p[len(p)-1])
		}
		mk.wordStart = isASCIILetter(p[0])
		mk.length = len(p)
		m.markers = append(m.markers, mk)
		patterns = append(patterns, p)
		for i := 0; i < len(p); i++ {
			used[p[i]] = true
		}
	}
	m.classes = 1
	for b := range 256 {
		if used[b] {
			m.class[b] = uint8(m.classes)
			m.classes++
		}
	}

	// Build the trie with sparse children, then fill the dense table in
	// breadth-first order so each state's failure target is complete.
	type node struct {
		child map[uint8]int
		fail  int
		out   []uint16
	}
	nodes := []node{{child: map[uint8]int{}}}
	for id, p := range patterns {
		s := 0
		for i := 0; i < len(p); i++ {
			c := m.class[p[i]]
			nx, ok := nodes[s].child[c]
			if !ok {
				nx = len(nodes)
				nodes = append(nodes, node{child: map[uint8]int{}})
				nodes[s].child[c] = nx
			}
			s = nx
		}
		nodes[s].out = append(nodes[s].out, uint16(id))
	}
	m.next = make([]uint16, len(nodes)*m.classes)
	m.out = make([][]uint16, len(nodes))
	m.hasOut = make([]bool, len(nodes))
	queue := []int{0}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		n := &nodes[s]
		if s != 0 {
			n.out = append(n.out, nodes[n.fail].out...)
		}
		sort.Slice(n.out, func(a, b int) bool { return n.out[a] < n.out[b] })
		m.out[s] = n.out
		m.hasOut[s] = len(n.out) > 0
		for c := 0; c < m.classes; c++ {
			if nx, ok := n.child[uint8(c)]; ok && c != 0 {
				if s != 0 {
					nodes[nx].fail = int(m.next[n.fail*m.classes+c])
				}
				m.next[s*m.classes+c] = uint16(nx)
				queue = append(queue, nx)
			} else if s != 0 {
				m.next[s*m.classes+c] = m.next[n.fail*m.classes+c]
			}
		}
	}
	return m
}

// count adds the number of marker matches in text to counts, by group.
// Text is folded to lower case on the fly: ASCII and the Latin-1 capitals
// (À–Þ), which covers the European languages the markers are written in.
func (m *matcher) count(text string, counts *[numGroups]int) {
	s := 0
	for i := 0; i < len(text); i++ {
		b := text[i]
		switch {
		case 'A' <= b && b <= 'Z':
			b += 'a' - 'A'
		case 0x80 <= b && b <= 0x9e && b != 0x97 && i > 0 && text[i-1] == 0xc3:
			b += 0x20
		}
		s = int(m.next[s*m.classes+int(m.class[b])])
		if !m.hasOut[s] {
			continue
		}
		for _, id := range m.out[s] {
			mk := &m.markers[id]
			start := i + 1 - mk.length
			if mk.wordStart && start > 0 && isWordRune(utf8.DecodeLastRuneInString(text[:start])) {
				continue
			}
			if mk.wordEnd && i+1 < len(text) && isWordRune(utf8.DecodeRuneInString(text[i+1:])) {
				continue
			}
			counts[mk.group]++
		}
	}
}

func isASCIILetter(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' }

// isWordRune reports whether r (of the given encoded size) continues a
// word, so "über" is one word and "¿cuántos" starts one. CJK markers do
// not check boundaries at all.
func isWordRune(r rune, _ int) bool {
	if r < utf8.RuneSelf {
		return isASCIILetter(byte(r)) || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}
