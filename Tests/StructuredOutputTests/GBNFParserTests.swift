import Engine
import Testing

@testable import StructuredOutput

@Suite struct GBNFParserTests {
    @Test func llamaCppStyleGrammarsParseAndMatch() throws {
        // The shape of llama.cpp's arithmetic and list examples: comments, groups across lines,
        // classes, escapes, repetition counts.
        let source = #"""
            # a tiny calculator
            root  ::= (expr "=" ws term "\n")+
            expr  ::= term ([-+*/] term)*
            term  ::= ident | num | "(" ws expr ")" ws
            ident ::= [a-z] [a-z0-9_]* ws
            num   ::= [0-9]{1,3} ws
            ws    ::= [ \t]*
            """#
        let m = GrammarMatcher(grammar: try StructuredFormat.grammar(source).compiledGrammar())
        #expect(SchemaCheck.accepts(m, "1+2= 3\n"))
        #expect(SchemaCheck.accepts(m, "(a1 *22)= x\nb=9\n"))
        #expect(!SchemaCheck.accepts(m, "1234=1\n"))
        #expect(!SchemaCheck.accepts(m, "1+2=3"))
        let list = #"""
            root ::= item+
            item ::= "- " [^\n]+ "\n"
            """#
        let l = GrammarMatcher(grammar: try StructuredFormat.grammar(list).compiledGrammar())
        #expect(SchemaCheck.accepts(l, "- milk\n- 卵\n"))
        #expect(!SchemaCheck.accepts(l, "- \n"))
        let escapes = #"root ::= "\x41\u00e9\"" [\]\-] . "\U0001F600""#
        let e = GrammarMatcher(grammar: try StructuredFormat.grammar(escapes).compiledGrammar())
        #expect(SchemaCheck.accepts(e, "Aé\"]x😀"))
        #expect(SchemaCheck.accepts(e, "Aé\"-😀😀"))
        #expect(!SchemaCheck.accepts(e, "Aé\"a😀😀"))
        let alternativesOnNewLines = "root ::= \"a\"\n  | \"b\"\n"
        let a = GrammarMatcher(grammar: try StructuredFormat.grammar(alternativesOnNewLines).compiledGrammar())
        #expect(SchemaCheck.accepts(a, "b"))
    }

    @Test func errorsCarryTheirLocation() {
        #expect(throws: StructuredOutputError.invalidGrammar(line: 2, column: 11, message: "unterminated literal")) {
            try GBNFParser.parse("root ::= x\nx ::= \"abc")
        }
        #expect(throws: StructuredOutputError.invalidGrammar(line: 1, column: 6, message: "expected '::='")) {
            try GBNFParser.parse("root = \"a\"")
        }
        #expect(throws: StructuredOutputError.uncompilable("rule 'y' is used but not defined")) {
            try StructuredFormat.grammar("root ::= y").compiledGrammar()
        }
        #expect(
            throws: StructuredOutputError.uncompilable(
                "rule 'root' is left-recursive (it can reach itself before any byte)")
        ) {
            try StructuredFormat.grammar("root ::= root \"a\" | \"a\"").compiledGrammar()
        }
    }
}
