//! What a wake-up is about: the names writers publish and subscribers wait on.
//!
//! Invariant: a topic names one thing a subscriber re-reads (a session's log, a run tree's
//! journals, the run queue), so a wake-up tells exactly which readers have something new, and
//! its text form (the payload of a PostgreSQL notification) parses back to the same topic.

/// The PostgreSQL channel a write notifies and a store listens on.
#[cfg(feature = "postgres")]
pub(crate) const CHANNEL: &str = "seed_agents_feed";

/// The statement that notifies [`CHANNEL`] of a topic (its payload the only parameter).
#[cfg(feature = "postgres")]
pub(crate) const NOTIFY: &str = "SELECT pg_notify('seed_agents_feed', $1)";

/// Something subscribers wait on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Topic {
    /// A session's event log, by session id.
    Session(String),
    /// The journals of a run tree, by its root run's id.
    RunTree(String),
    /// The run queue: work became claimable, or may soon (a requeue, a released cap).
    Runs,
    /// Every session's log (sessions deleted in bulk, with their agent): published, never
    /// subscribed to.
    Sessions,
}

#[cfg(feature = "postgres")]
impl Topic {
    /// The notification payload that names this topic.
    pub(crate) fn payload(&self) -> String {
        match self {
            Topic::Session(id) => format!("s:{id}"),
            Topic::RunTree(id) => format!("j:{id}"),
            Topic::Runs => "r".to_owned(),
            Topic::Sessions => "S".to_owned(),
        }
    }

    /// The topic `payload` names, if it names one.
    pub(crate) fn parse(payload: &str) -> Option<Topic> {
        match payload.split_once(':') {
            Some(("s", id)) => Some(Topic::Session(id.to_owned())),
            Some(("j", id)) => Some(Topic::RunTree(id.to_owned())),
            None if payload == "r" => Some(Topic::Runs),
            None if payload == "S" => Some(Topic::Sessions),
            _ => None,
        }
    }
}

/// The topics an operation's writes touched, published once its transaction commits.
pub(crate) type Notes = std::cell::RefCell<Vec<Topic>>;

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use super::Topic;

    #[test]
    fn a_payload_parses_back_to_its_topic() {
        for topic in [
            Topic::Session("a:b".into()),
            Topic::RunTree("r-1".into()),
            Topic::Runs,
            Topic::Sessions,
        ] {
            assert_eq!(Topic::parse(&topic.payload()), Some(topic));
        }
        assert!(super::NOTIFY.contains(&format!("'{}'", super::CHANNEL)));
        for junk in ["", "x:1", "runs", "s"] {
            assert_eq!(Topic::parse(junk), None, "{junk}");
        }
    }
}
