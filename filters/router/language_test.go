package router

import "testing"

func TestDetectLanguage(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"How do I reset my password?", "en"},
		{"请帮我写一首关于秋天的诗", "zh"},
		{"東京の天気はどうですか", "ja"},
		{"안녕하세요, 도와주세요", "ko"},
		{"Привет, как дела?", "ru"},
		{"مرحبا كيف حالك", "ar"},
		{"Explain 机器学习 in one line please, in English", "en"},
		{"", "en"},
	}
	for _, tt := range tests {
		if got := DetectLanguage(tt.in); got != tt.want {
			t.Errorf("DetectLanguage(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
