import CJack
import Glibc
import JackCommon
import Synchronization

/// Connection changes the server reports to a JackSession (libjack's port connect callback,
/// on libjack's notification thread): counted, the first one's frame time kept, and a
/// semaphore posted so that a main loop waiting on it looks at once. A client gets these only
/// once it is active (`JackSession.watchConnections`); a client without a process callback is
/// activated for them without joining the graph, so it costs no cycle.
struct ConnectionWatch: ~Copyable {
    let client: OpaquePointer
    let changes = Atomic<Int>(0)
    /// Frame time of the first change since `JackSession.connectionChanges` last read it, plus
    /// one (0: none).
    let firstChangeFrame = Atomic<UInt64>(0)
    /// The semaphore posted at each change (its address; 0: none).
    let wake = Atomic<UInt>(0)
    /// The server shut the client down (it went away).
    let shutDown = Atomic<Bool>(false)

    init(client: OpaquePointer) {
        self.client = client
    }
}

/// libjack's port connect callback of a JackSession: atomics and a `sem_post` only.
func sessionPortConnect(_ a: jack_port_id_t, _ b: jack_port_id_t, _ connect: Int32, _ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    let watch = argument.assumingMemoryBound(to: ConnectionWatch.self)
    let frame = UInt64(jack_frame_time(watch.pointee.client)) + 1
    _ = watch.pointee.firstChangeFrame.compareExchange(expected: 0, desired: frame, ordering: .relaxed)
    watch.pointee.changes.wrappingAdd(1, ordering: .releasing)
    if let wake = UnsafeMutablePointer<sem_t>(bitPattern: watch.pointee.wake.load(ordering: .acquiring)) { sem_post(wake) }
}

/// libjack's shutdown callback of a JackSession: the server went away (an atomic and a `sem_post`).
func sessionShutdown(_ code: jack_status_t, _ reason: UnsafePointer<CChar>?, _ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    let watch = argument.assumingMemoryBound(to: ConnectionWatch.self)
    watch.pointee.shutDown.store(true, ordering: .releasing)
    JackClients.serverWentAway()
    if let wake = UnsafeMutablePointer<sem_t>(bitPattern: watch.pointee.wake.load(ordering: .acquiring)) { sem_post(wake) }
}
