import Testing

@testable import Engine

/// Tokens and whitespace control, checked against what jinja2 (trim_blocks and lstrip_blocks on,
/// as Hugging Face sets them) produces for the same source.
@Suite struct JinjaLexerTests {
    func render(_ source: String, _ context: [String: JinjaValue] = [:]) throws -> String {
        try JinjaTestSupport.render(source, context)
    }

    @Test func textExpressionsAndComments() throws {
        #expect(try render("a{{ 'b' }}c{# note #}d") == "abcd")
        #expect(try render("{{ \"q\\\"\\n\\t\\\\\" }}") == "q\"\n\t\\")
        #expect(try render(#"{{ '\u00e9\x41' }}"#) == "éA")
        #expect(try render("{{ 'a' 'b' }}") == "ab")
        #expect(try render("{{ 1_000 + 2.5e1 }}") == "1025.0")
    }

    @Test func minusStripsWhitespaceOnItsSide() throws {
        #expect(try render("a  \n {{- 'b' -}} \n  c") == "abc")
        #expect(try render("a \n{%- if true -%}\n  b  \n{%- endif -%}\n c") == "abc")
        #expect(try render("a\n  {#- comment -#}  \nb") == "ab")
    }

    @Test func trimBlocksDropsTheNewlineAfterABlockTag() throws {
        #expect(try render("{% if true %}\nyes\n{% endif %}\nafter") == "yes\nafter")
        // Not after an expression.
        #expect(try render("{{ 'x' }}\ny") == "x\ny")
        #expect(try render("{# c #}\nz") == "z")
    }

    @Test func lstripBlocksRemovesIndentBeforeABlockTagAtLineStart() throws {
        #expect(try render("  {% if true %}\n    v\n  {% endif %}\n") == "    v\n")
        // Not when text precedes the tag on its line, nor before an expression.
        #expect(try render("x {% if true %}y{% endif %}") == "x y")
        #expect(try render("  {{ 'e' }}") == "  e")
        // `{%+` keeps the indent.
        #expect(try render("  {%+ if true %}k{% endif %}") == "  k")
    }

    @Test func closingBraceInsideADictIsNotTheEndOfTheTag() throws {
        #expect(try render("{{ {'a': {'b': 1}}['a']['b'] }}") == "1")
    }

    @Test func syntaxErrorsNameTheLine() throws {
        for (source, fragment) in [
            ("a\nb {{ 'x' ", "unterminated"), ("{% if x %}", "endif"), ("x\n\n{{ 1 + }}", "line 3"),
            ("{% frobnicate %}", "unknown statement"), ("{{ 'abc }}", "unterminated string"), ("{# x", "comment"),
            ("{% endfor %}", "unexpected"), ("{{ a ? b }}", "unexpected character"),
        ] {
            #expect(throws: JinjaError.self, "\(source)") { try render(source) }
            do {
                _ = try render(source)
            } catch {
                #expect("\(error)".contains(fragment), "\(source): \(error)")
            }
        }
    }
}
