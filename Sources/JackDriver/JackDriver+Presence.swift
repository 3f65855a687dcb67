import CJack
import QueueCore

extension JackDriver: ServerBackedProvider {
    /// True if the server answers: a client opens on it (and closes at once). Asked only after
    /// a queue's client could not be opened, to tell "no server" (the queue waits for one:
    /// `DeferringDeviceProvider`) from a server that refused the client.
    public func serverIsRunning() -> Bool {
        var status = jack_status_t(0)
        guard let client = jaq_jack_client_open("jaq-probe", JackNoStartServer, &status, serverName) else { return false }
        jack_client_close(client)
        return true
    }
}
