import Glibc
import QueueCore
import Synchronization

/// One thread per process that turns JACK's notifications (shutdown, xrun,
/// sample rate, freewheel) into device events, so JACK's threads only set flags.
final class JackEventWatcher: @unchecked Sendable {
    static let shared = JackEventWatcher()
    let signal = Semaphore()
    private let devices = Mutex<[ObjectIdentifier: JackDeviceBox]>([:])
    private let started = Mutex(false)

    struct JackDeviceBox: @unchecked Sendable { weak var device: JackDevice? }

    func add(_ device: JackDevice) {
        devices.withLock { $0[ObjectIdentifier(device)] = JackDeviceBox(device: device) }
        let first = started.withLock { running -> Bool in
            defer { running = true }
            return !running
        }
        if first {
            var thread = pthread_t()
            let result = pthread_create(&thread, nil, { _ in
                JackEventWatcher.shared.run()
                return nil
            }, nil)
            if result == 0 { pthread_detach(thread) }
        }
    }

    func remove(_ device: JackDevice) {
        _ = devices.withLock { $0.removeValue(forKey: ObjectIdentifier(device)) }
    }

    /// Sleeps until a callback posts: every flag they set comes with a post (JackCallbacks),
    /// and the semaphore counts them, so no event is missed by not looking (issue #29: the
    /// four looks a second it used to take cost a take about 2 ms of CPU per 10 s).
    private func run() {
        while true {
            signal.wait()
            let live = devices.withLock { $0.values.compactMap { $0.device } }
            for device in live { device.reportEvents() }
        }
    }
}
