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
        let regex: Regex<AnyRegexOutput>
        do { regex = try Regex(trimmed) } catch {
            throw QueueError.invalidDevice("no port named \(trimmed), and it is not a regular expression")
        }
        let matched = candidates.filter { (try? regex.firstMatch(in: $0)) != nil }
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
}

extension String {
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
