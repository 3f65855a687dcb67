import CJack
import JackCommon
import QueueCore

extension JackDriver: ServerBackedProvider {
    /// True if the server answers: a client opens on it (and closes at once). Asked only after
    /// a queue's client could not be opened, to tell "no server" (the queue waits for one:
    /// `DeferringDeviceProvider`) from a server that refused the client.
    public func serverIsRunning() -> Bool {
        // libjack cannot open a client now (JackClients): not a missing server to wait for.
        if JackClients.stuckReason != nil { return true }
        var status = jack_status_t(0)
        guard let client = JackClients.open("jaq-probe", JackNoStartServer, &status, serverName) else { return false }
        JackClients.close(client, serverGone: false)
        return true
    }
}
