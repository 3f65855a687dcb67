extension String {
    /// The text without leading and trailing blanks: what Foundation's
    /// `trimmingCharacters(in: .whitespaces)` removes (Unicode category Zs, U+0009 TAB and,
    /// as CoreFoundation's set has it, U+200B ZERO WIDTH SPACE),
    /// here so that the module needs FoundationEssentials only (Docs/benchmarks.md, "Runtime size"),
    /// and the jaq tool too (Docs/engine.md).
    public func trimmingWhitespace() -> String {
        func isBlank(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "\t" || scalar == "\u{200B}" || scalar.properties.generalCategory == .spaceSeparator
        }
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !isBlank($0) }),
              let last = scalars.lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(scalars[first...last])
    }
}
