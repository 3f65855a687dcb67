import CJack
import Glibc
import Synchronization

/// libjack prints its errors and notices to stderr ("Cannot connect to server socket...").
/// A queue reports failures as result codes instead, so those messages are kept quiet
/// unless JAQ_JACK_VERBOSE is set. (The handlers do nothing: libjack may call them from a
/// client's process thread, which must not lock or allocate.)
public enum JackMessages {
    private static let installed = Mutex(false)

    /// Installs the handlers once per process.
    public static func install() {
        let first = installed.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        if getenv("JAQ_JACK_VERBOSE") != nil { return }
        jack_set_error_function { _ in }
        jack_set_info_function { _ in }
    }

    /// For a command-line program, whose stderr is its user's: also keeps quiet what the
    /// libraries under libjack write to the C stderr stream while a client opens (libdb's
    /// "/dev/shm/jack_db-0/__db.002: No such file or directory" when a stopping server removes
    /// the metadata database as this process opens it): the C `stderr` stream goes to
    /// /dev/null for the duration of each open; fd 2 stays. The program's own lines must go to
    /// fd 2 (`FileHandle.standardError`, as jaq's `Log` and watchdog do), not through the C
    /// stream, or one written by another thread during an open is lost. Not for a library: a
    /// program's stderr is its own. JAQ_JACK_VERBOSE leaves everything audible.
    public static func quietOpens() {
        if getenv("JAQ_JACK_VERBOSE") != nil { return }
        jaq_jack_set_quiet_open(1)
    }
}
