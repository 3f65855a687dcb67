import CJack
import Glibc
import QueueCore

/// Port lists and connections, as every client of jaq's asks the server for them (a queue's
/// device, the control clients).
package enum JackPorts {
    /// `jack_connect`, patient with a client that is still starting: JACK2 refuses to connect
    /// ports whose owner has registered them but not yet activated (ecasound, for one, does
    /// that for a moment), so a refusal is retried for up to `patience` seconds while both
    /// ports exist. Returns jack_connect's result (0 or EEXIST on success).
    package static func connect(_ client: OpaquePointer, _ source: String, _ destination: String, patience: Double = 2) -> Int32 {
        var result = jack_connect(client, source, destination)
        var waited = 0.0
        while result != 0 && result != EEXIST && waited < patience,
              jack_port_by_name(client, source) != nil, jack_port_by_name(client, destination) != nil {
            HostClock.sleep(seconds: 0.02)
            waited += 0.02
            result = jack_connect(client, source, destination)
        }
        return result
    }

    /// The names of the ports `port` is connected to.
    package static func connections(of port: OpaquePointer?, in client: OpaquePointer) -> [String] {
        guard let port else { return [] }
        return names(jack_port_get_all_connections(client, port))
    }

    /// Port names the server lists for `flags` (audio ports only).
    package static func list(_ client: OpaquePointer, flags: UInt) -> [String] {
        names(jack_get_ports(client, nil, jaq_jack_default_audio_type(), flags))
    }

    /// The names of a NULL-terminated list libjack allocated; frees it.
    private static func names(_ list: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> [String] {
        guard let list else { return [] }
        defer { jack_free(list) }
        var names: [String] = []
        var i = 0
        while let name = list[i] {
            names.append(String(cString: name))
            i += 1
        }
        return names
    }
}
