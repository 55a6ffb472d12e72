package builtin

import (
	"path"
	"strings"
)

// languageByExt maps a lower-case file extension to a language name, the
// names and extensions as GitHub's linguist spells the common ones.
var languageByExt = map[string]string{
	".go": "Go", ".rs": "Rust", ".c": "C", ".h": "C", ".cc": "C++", ".cpp": "C++", ".cxx": "C++",
	".hpp": "C++", ".hh": "C++", ".java": "Java", ".kt": "Kotlin", ".kts": "Kotlin", ".scala": "Scala",
	".swift": "Swift", ".m": "Objective-C", ".cs": "C#", ".fs": "F#", ".py": "Python", ".rb": "Ruby",
	".php": "PHP", ".pl": "Perl", ".lua": "Lua", ".r": "R", ".jl": "Julia", ".ex": "Elixir",
	".exs": "Elixir", ".erl": "Erlang", ".hs": "Haskell", ".ml": "OCaml", ".clj": "Clojure",
	".dart": "Dart", ".zig": "Zig", ".nim": "Nim", ".js": "JavaScript", ".mjs": "JavaScript",
	".cjs": "JavaScript", ".jsx": "JavaScript", ".ts": "TypeScript", ".tsx": "TypeScript",
	".vue": "Vue", ".svelte": "Svelte", ".html": "HTML", ".htm": "HTML", ".css": "CSS",
	".scss": "SCSS", ".sass": "Sass", ".less": "Less", ".sh": "Shell", ".bash": "Shell",
	".zsh": "Shell", ".fish": "Shell", ".ps1": "PowerShell", ".sql": "SQL", ".proto": "Protocol Buffers",
	".graphql": "GraphQL", ".tf": "HCL", ".hcl": "HCL", ".nix": "Nix", ".md": "Markdown",
	".markdown": "Markdown", ".rst": "reStructuredText", ".adoc": "AsciiDoc", ".txt": "Text",
	".json": "JSON", ".yaml": "YAML", ".yml": "YAML", ".toml": "TOML", ".xml": "XML", ".ini": "INI",
	".csv": "CSV", ".mod": "Go Module", ".sum": "Go Checksums", ".gradle": "Gradle", ".cmake": "CMake",
	".mk": "Makefile", ".dockerfile": "Dockerfile", ".tex": "TeX", ".el": "Emacs Lisp", ".vim": "Vim Script",
}

// languageByName maps whole file names that carry no telling extension.
var languageByName = map[string]string{
	"Makefile": "Makefile", "GNUmakefile": "Makefile", "Dockerfile": "Dockerfile",
	"Containerfile": "Dockerfile", "Jenkinsfile": "Groovy", "Rakefile": "Ruby", "Gemfile": "Ruby",
	"CMakeLists.txt": "CMake", "go.mod": "Go Module", "go.sum": "Go Checksums",
	"Vagrantfile": "Ruby", "Justfile": "Just", "justfile": "Just",
}

// Language returns the language of a file from its name (path may hold
// directories): a known whole name first (Makefile, Dockerfile, go.mod),
// then the extension, case-insensitively. It returns "" for an unknown
// kind, which fs.lines leaves out.
func Language(name string) string {
	base := path.Base(name)
	if l, ok := languageByName[base]; ok {
		return l
	}
	return languageByExt[strings.ToLower(path.Ext(base))]
}
