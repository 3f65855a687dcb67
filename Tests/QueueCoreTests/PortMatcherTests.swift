import Testing
@testable import QueueCore

/// Port names as `jaq record`/`jaq play` and CurrentDevice resolve them: the fast paths
/// (literal patterns without a regex, ASCII names compared byte by byte) give exactly what
/// the general ones give.
@Suite struct PortMatcherTests {
    static let names: [String] = {
        var names = ["system:capture_1", "system:capture_2", "system:capture_10", "system:playback_1",
                     "jaq-1-ramp64:out_1", "jaq-1-ramp64:out_12", "jaq-1-ramp64:out_2", "ardour:Audio 1/audio_out 1",
                     "slave1:from_slave_1", "a:b", "a:b2", "a:b10", "a:b02", "x:0", "x:00", "x:007", "x:7", "x:",
                     "mixer:in_٣", "mixer:in_2", "mixer:in_é1", "mixer:in_e1"]
        var x: UInt32 = 17
        let alphabet = Array("ab:_-019 ")
        for _ in 0..<300 {
            var name = ""
            x = x &* 1_664_525 &+ 1_013_904_223
            for _ in 0..<(Int(x >> 28) + 1) {
                x = x &* 1_664_525 &+ 1_013_904_223
                name.append(alphabet[Int(x >> 16) % alphabet.count])
            }
            names.append(name)
        }
        return names
    }()

    @Test func asciiComparisonEqualsTheUnicodeOne() {
        for a in Self.names where a.utf8.allSatisfy({ $0 < 0x80 }) {
            for b in Self.names where b.utf8.allSatisfy({ $0 < 0x80 }) {
                let fast = a.utf8.withContiguousStorageIfAvailable { x in
                    b.utf8.withContiguousStorageIfAvailable { y in PortMatcher.asciiNaturalLess(x, y) } ?? nil
                } ?? nil
                #expect(fast == PortMatcher.unicodeNaturalLess(a, b), "\(a) < \(b)")
            }
        }
    }

    @Test func namesSortNaturallyInEveryScript() {
        #expect(PortMatcher.naturalSorted(["system:capture_10", "system:capture_2", "system:capture_1"])
                == ["system:capture_1", "system:capture_2", "system:capture_10"])
        // An Arabic-Indic three sorts as 3, after 2; non-ASCII names take the Unicode path.
        #expect(PortMatcher.naturalSorted(["mixer:in_٣", "mixer:in_2", "mixer:in_10"]) == ["mixer:in_2", "mixer:in_٣", "mixer:in_10"])
    }

    @Test(arguments: ["out_1$", "^jaq-1-ramp64:out_1$", "^system:", "capture_1", "system:capture_1", "Audio 1/audio_out 1",
                      "from_slave_", "x:$", "b0", "^a:b$", "nothing-like-it", "e1$", "_1"])
    func literalPatternsMatchAsTheRegexWould(pattern: String) throws {
        let literal = try #require(LiteralPattern(pattern), "\(pattern) takes the literal path")
        let regex = try Regex(pattern)
        let expected = Self.names.filter { (try? regex.firstMatch(in: $0)) != nil }
        #expect(Self.names.filter { literal.matches($0) } == expected)
        // And through resolve (an exact name is itself; otherwise every match, sorted).
        if !expected.isEmpty, !Self.names.contains(pattern) {
            #expect(try PortMatcher.resolve(pattern, candidates: Self.names, physical: []) == PortMatcher.naturalSorted(expected))
        }
    }

    @Test(arguments: ["out_[12]$", "capture_.*", "a|b", "b\\d", "(x)", "a+", "^$", "x?", "in_é1"])
    func regexSyntaxIsNotTakenLiterally(pattern: String) {
        #expect(LiteralPattern(pattern) == nil)
    }
}
