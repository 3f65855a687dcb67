/// Resolves what a queue's CurrentDevice names ("system", a port, a regular
/// expression, or "") into device ports, and plans the connections.
public enum PortMatcher {
    /// Device ports `target` names among `candidates` (the ports a queue may connect to).
    /// - Parameters:
    ///   - physical: the physical ports of the right direction ("system").
    /// - Returns: the matched ports in natural order; throws `.invalidDevice` if none.
    public static func resolve(_ target: String, candidates: [String], physical: [String]) throws -> [String] {
        let trimmed = target.trimmingWhitespace()
        if trimmed.isEmpty { return [] }
        if trimmed == "system" {
            guard !physical.isEmpty else { throw QueueError.invalidDevice("no physical (system) ports") }
            return naturalSorted(physical)
        }
        if candidates.contains(trimmed) { return [trimmed] }
        // A comma-separated list of exact names keeps the order given.
        if trimmed.contains(",") {
            let names = trimmed.split(separator: ",").map { String($0).trimmingWhitespace() }
            for name in names where !candidates.contains(name) {
                throw QueueError.invalidDevice("no port named \(name)")
            }
            return names
        }
        let matched: [String]
        if let literal = LiteralPattern(trimmed) {
            // No regular-expression syntax besides the anchors: the same matches, without
            // compiling and running a regex per port (64 patterns over 200 ports add up).
            matched = candidates.filter { literal.matches($0) }
        } else {
            let regex: Regex<AnyRegexOutput>
            do { regex = try Regex(trimmed) } catch {
                throw QueueError.invalidDevice("no port named \(trimmed), and it is not a regular expression")
            }
            matched = candidates.filter { (try? regex.firstMatch(in: $0)) != nil }
        }
        guard !matched.isEmpty else { throw QueueError.invalidDevice("no port matches \(trimmed)") }
        return naturalSorted(matched)
    }

    /// Which of our `portCount` ports connects to which target port.
    /// A mono output queue's two ports take the first two targets (one if there is one);
    /// otherwise port i takes target i, wrapping when there are more ports than targets.
    public static func plan(portCount: Int, targets: [String], monoPair: Bool) -> [(port: Int, target: String)] {
        guard !targets.isEmpty else { return [] }
        if monoPair {
            return targets.count == 1 ? [(0, targets[0])] : [(0, targets[0]), (1, targets[1])]
        }
        return (0..<portCount).map { ($0, targets[$0 % targets.count]) }
    }

    /// Sorts port names so that "capture_2" comes before "capture_10".
    public static func naturalSorted(_ names: [String]) -> [String] {
        names.sorted { naturalLess($0, $1) }
    }

    static func naturalLess(_ a: String, _ b: String) -> Bool {
        // Port names are ASCII almost always: compare their bytes, digits as numbers.
        if let ascii = a.utf8.withContiguousStorageIfAvailable({ x in
            b.utf8.withContiguousStorageIfAvailable { y in asciiNaturalLess(x, y) } ?? nil
        }) ?? nil {
            return ascii
        }
        return unicodeNaturalLess(a, b)
    }

    /// `naturalLess` for any names: Unicode digits (of any script) compare as numbers.
    static func unicodeNaturalLess(_ a: String, _ b: String) -> Bool {
        var i = a.unicodeScalars.makeIterator()
        var j = b.unicodeScalars.makeIterator()
        var x = i.next()
        var y = j.next()
        while let cx = x, let cy = y {
            if cx.properties.numericType != nil && cy.properties.numericType != nil {
                var nx = 0, ny = 0
                while let d = x, let v = d.properties.numericValue, d.properties.numericType != nil { nx = nx * 10 + Int(v); x = i.next() }
                while let d = y, let v = d.properties.numericValue, d.properties.numericType != nil { ny = ny * 10 + Int(v); y = j.next() }
                if nx != ny { return nx < ny }
                continue
            }
            if cx != cy { return cx.value < cy.value }
            x = i.next()
            y = j.next()
        }
        return x == nil && y != nil
    }

    /// `naturalLess` on two ASCII names; nil when either is not ASCII.
    static func asciiNaturalLess(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool? {
        func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
        var i = 0, j = 0
        while i < a.count && j < b.count {
            let cx = a[i], cy = b[j]
            if cx >= 0x80 || cy >= 0x80 { return nil }
            if isDigit(cx) && isDigit(cy) {
                var nx = 0, ny = 0
                while i < a.count && isDigit(a[i]) { nx = nx &* 10 &+ Int(a[i] - 0x30); i += 1 }
                while j < b.count && isDigit(b[j]) { ny = ny &* 10 &+ Int(b[j] - 0x30); j += 1 }
                if nx != ny { return nx < ny }
                continue
            }
            if cx != cy { return cx < cy }
            i += 1
            j += 1
        }
        if a[i...].contains(where: { $0 >= 0x80 }) || b[j...].contains(where: { $0 >= 0x80 }) { return nil }
        return i == a.count && j < b.count
    }
}

/// A port pattern with no regular-expression syntax except a leading `^` and a trailing `$`:
/// matched as the regex would (a substring, a prefix, a suffix or the whole name).
struct LiteralPattern {
    let text: String
    let anchoredStart: Bool
    let anchoredEnd: Bool

    init?(_ pattern: String) {
        var body = Substring(pattern)
        anchoredStart = body.hasPrefix("^")
        if anchoredStart { body = body.dropFirst() }
        anchoredEnd = body.hasSuffix("$")
        if anchoredEnd { body = body.dropLast() }
        // ASCII letters, digits and punctuation that means itself in a regex (`-` does,
        // outside brackets); anything else goes to the regex engine.
        let literal = body.unicodeScalars.allSatisfy { c in
            c.isASCII && (c.properties.isAlphabetic || ("0"..."9").contains(c) || "_-:/@#%=,;'\"<>!~` ".unicodeScalars.contains(c))
        }
        guard literal, !body.isEmpty else { return nil }
        text = String(body)
    }

    func matches(_ name: String) -> Bool {
        switch (anchoredStart, anchoredEnd) {
        case (true, true): name == text
        case (true, false): name.hasPrefix(text)
        case (false, true): name.hasSuffix(text)
        case (false, false): name.contains(text)
        }
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
