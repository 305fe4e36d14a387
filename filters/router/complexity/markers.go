package complexity

// group is a family of marker phrases that count towards one feature.
type group uint8

const (
	groupMultiStep  group = iota // asks for a chain of reasoning
	groupSequence                // orders steps: first … then … finally
	groupQuant                   // asks for a quantity or a calculation
	groupCode                    // programming
	groupConstraint              // narrows what an acceptable answer is
	groupLogic                   // premises, conditions, truth
	groupExpert                  // specialist domains (law, medicine, science, finance)
	groupOpenEnded               // creative or conversational asks a small model does well
	numGroups
)

// markerSpec is one phrase of the marker table; a trailing '*' matches any
// word ending ("deriv*" covers derive, derivation, derivative).
type markerSpec struct {
	group group
	text  string
}

// markerTable lists the phrases, lower case, by group and language
// (English, Chinese, Spanish, French, German, Japanese). Lists are kept
// short and unambiguous: a phrase that is common in easy prompts too
// ("what", "how") adds noise, not signal.
var markerTable = specs(map[group][]string{
	groupMultiStep: {
		// en
		"step by step", "step-by-step", "explain why", "explain how", "prove*", "proof", "derive*", "derivation",
		"show that", "justify", "reasoning", "reason about", "analy*", "deduce", "infer*", "walk me through",
		"break down", "in detail", "why does", "why is", "why do", "what would happen", "trade-off*", "tradeoff*",
		// zh
		"一步一步", "逐步", "分步", "解释为什么", "为什么", "证明", "推导", "分析", "推理", "详细",
		// es
		"paso a paso", "explica por qué", "por qué", "demuestra", "demostrar", "deriva", "analiza", "razona",
		// fr
		"étape par étape", "explique pourquoi", "pourquoi", "démontre*", "prouve*", "dérive*", "analyse*", "raisonne*",
		// de
		"schritt für schritt", "erkläre warum", "warum", "beweise*", "herleit*", "leite", "analysier*", "begründe*",
		// ja
		"ステップバイステップ", "段階的", "なぜ", "証明", "導出", "分析", "推論", "理由を",
	},
	groupSequence: {
		"first,", "then ", "next,", "finally", "after that", "afterwards", "subsequently",
		"首先", "然后", "接着", "最后", "其次",
		"primero", "luego", "después", "finalmente",
		"d'abord", "ensuite", "puis", "enfin",
		"zuerst", "danach", "anschließend", "schließlich",
		"まず", "次に", "その後", "最後に",
	},
	groupQuant: {
		"calculat*", "compute*", "solve*", "how many", "how much", "how long", "how far", "how old",
		"probability", "equation*", "integral*", "derivative*", "percent*", "total", "remaining", "left over",
		"average", "ratio", "sum of", "product of", "value of", "find the", "evaluate", "simplify", "factor*",
		"polynomial*", "prime", "modulo", "divided", "multipl*", "minus", "plus", "twice", "half",
		"times as", "per ", "each", "fraction", "area", "volume", "speed", "rate",
		"计算", "求解", "多少", "几个", "方程", "概率", "积分", "导数", "平均", "总共", "百分之",
		"calcula*", "cuántos", "cuántas", "cuánto", "resuelve", "ecuación", "probabilidad", "promedio",
		"calcule*", "combien", "résous", "résoudre", "équation", "probabilité", "moyenne",
		"berechne*", "wie viele", "wie viel", "löse", "gleichung", "wahrscheinlichkeit", "durchschnitt",
		"計算", "いくつ", "何個", "何人", "方程式", "確率", "積分", "微分", "平均",
	},
	groupCode: {
		"```", "function", "algorithm*", "implement*", "code", "program*", "python", "javascript", "java",
		"c++", "sql", "regex", "regular expression", "class ", "def ", "return ", "compile*", "debug*",
		"bug", "runtime", "complexity", "array*", "string*", "html", "api", "recursion", "recursive",
		"函数", "代码", "算法", "实现", "程序", "编程", "数组",
		"código", "función", "algoritmo", "implementa", "programa",
		"fonction", "algorithme", "implémente*",
		"funktion", "algorithmus", "implementier*",
		"関数", "コード", "アルゴリズム", "実装", "プログラム",
	},
	groupConstraint: {
		"must", "exactly", "at least", "at most", "no more than", "no less than", "only", "without",
		"ensure", "make sure", "do not", "don't", "except", "unless", "must not", "within", "limit*",
		"必须", "至少", "最多", "不要", "不能", "只能", "确保",
		"debe", "al menos", "exactamente", "sin ", "solo",
		"doit", "au moins", "exactement", "sans ", "seulement",
		"muss", "mindestens", "genau", "ohne", "nur",
		"必ず", "少なくとも", "以内", "だけ", "しないで",
	},
	groupLogic: {
		"if ", "then ", "not ", "all ", "none", "therefore", "implies", "true", "false", "valid",
		"premise*", "conclusion", "argument", "statement*", "assume", "suppose", "contradict*", "necessarily",
		"如果", "那么", "所有", "因此", "假设", "真", "假",
		"si ", "entonces", "todos", "verdadero", "falso", "supongamos",
		"alors", "tous", "vrai", "faux", "supposons",
		"wenn", "dann", "alle", "wahr", "falsch", "angenommen",
		"もし", "ならば", "すべて", "真", "偽", "仮定",
	},
	groupExpert: {
		"law", "legal", "court", "statute", "plaintiff", "defendant", "contract", "liab*",
		"patient", "diagnos*", "clinical", "symptom*", "disease", "drug", "dose",
		"molecul*", "chemical", "reaction", "quantum", "physics", "electron", "energy", "theorem",
		"econom*", "market", "interest rate", "inflation", "tax", "accounting",
		"法律", "法院", "合同", "患者", "诊断", "疾病", "分子", "量子", "经济", "定理",
		"ley", "tribunal", "paciente", "diagnóstico", "molécula", "cuántic*", "teorema",
		"loi", "tribunal", "patient", "diagnostic", "molécule", "quantique", "théorème",
		"gesetz", "gericht", "patient", "diagnose", "molekül", "quanten*", "theorem",
		"法律", "裁判", "患者", "診断", "分子", "量子", "経済", "定理",
	},
	groupOpenEnded: {
		"write a", "compose", "draft", "story", "poem", "blog", "email", "e-mail", "letter", "essay",
		"describe", "imagine", "pretend", "act as", "role", "summar*", "rewrite", "rephrase", "translate",
		"suggest*", "tips", "ideas", "recommend*", "brainstorm", "slogan", "joke", "tweet", "hello", "thank*",
		"写一", "故事", "诗", "邮件", "总结", "翻译", "介绍", "建议",
		"escribe", "historia", "poema", "correo", "resume", "traduce", "describe",
		"écris", "histoire", "poème", "courriel", "résume", "traduis", "décris",
		"schreibe", "geschichte", "gedicht", "zusammenfass*", "übersetze", "beschreibe",
		"書いて", "物語", "詩", "メール", "要約", "翻訳", "紹介",
	},
})

// specs flattens the table in group order, dropping a phrase listed twice
// in one group (several languages share words such as 分析 or "patient"),
// which would otherwise count twice.
func specs(by map[group][]string) []markerSpec {
	var out []markerSpec
	for g := range numGroups {
		seen := map[string]bool{}
		for _, text := range by[g] {
			if !seen[text] {
				seen[text] = true
				out = append(out, markerSpec{group: g, text: text})
			}
		}
	}
	return out
}
