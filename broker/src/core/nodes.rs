//! Nodes and their agents: registration (credentials, challenges), reconciliation
//! of what an agent runs with what the broker placed, nodes going down or drained
//! for a fault, the sealing of messages to agents, and the CURVE node keys.

use super::*;

impl Core {
    /// Adds a node as stored, or as it first registers; down until its agent registers.
    pub(super) fn add_node(&mut self, row: NodeRow) -> sched::NodeIdx {
        let NodeRow {
            id,
            name,
            cpus,
            mem_mb,
            last_seen_us: now_us,
            drain_reason: drain,
            drain_by,
            gpus,
        } = row;
        let name = name.as_str();
        let parts: Vec<sched::PartIdx> = self
            .cfg
            .partitions
            .iter()
            .enumerate()
            .filter(|(_, p)| p.has(name))
            .map(|(i, _)| sched::PartIdx(i as u32))
            .collect();
        let spec = sched::NodeSpec {
            name: name.to_string(),
            capacity: sched::Res {
                cpus,
                mem_mb,
                ..Default::default()
            },
            gpus: crate::gpus::specs(&gpus),
        };
        let idx = self.sched.add_node(
            spec,
            &parts,
            sched::Health::Down {
                reason: "not registered".into(),
            },
        );
        self.node_of_idx.push(id);
        self.node_by_name.insert(name.to_string(), id);
        self.nodes.insert(
            id,
            Node {
                id,
                name: name.to_string(),
                cpus,
                mem_mb,
                idx,
                // A drain stored before who set it was kept: the broker's.
                drain_by: drain_by.or_else(|| drain.as_ref().map(|_| ("root".into(), 0, now_us))),
                drain,
                peer: None,
                last_seen_us: now_us,
                running: BTreeSet::new(),
                held: BTreeSet::new(),
                enforced: Vec::new(),
                agent_version: String::new(),
                gpus,
                gpu_backend: String::new(),
                topology: None,
                gpu_faults: BTreeMap::new(),
                session: None,
                seq: 0,
                launches: 0,
                launch_no: HashMap::new(),
                unstarted: std::collections::HashSet::new(),
                step_endpoint: String::new(),
                beat_ms: 0,
                facts: None,
                last_busy_us: None,
            },
        );
        idx
    }

    /// The answer to a registration: the node's id and its heartbeat interval, which
    /// the node is noted as told.
    fn registered(&mut self, id: NodeId) -> BrokerMessage {
        let heartbeat_ms = self.heartbeat_ms();
        if let Some(n) = self.nodes.get_mut(&id) {
            n.beat_ms = heartbeat_ms;
        }
        BrokerMessage::Registered {
            node: id,
            heartbeat_ms,
        }
    }

    /// A node told its interval when the cluster was much smaller or larger is told
    /// it again, with its next heartbeat: the interval grows with the cluster so that
    /// all its nodes beat at most [`MAX_HEARTBEATS_PER_S`] times a second in all, which
    /// holds only if those that registered early (when one beat a second was cheap)
    /// slow down too. The registration's answer carries it; an agent takes it again
    /// as it is. Off by half or more: each node is told again a few times as a
    /// cluster of 10,000 comes up, not at every registration.
    pub(super) fn retune_heartbeat(
        &mut self,
        fx: &mut Effects,
        id: NodeId,
        peer: PeerId,
        request_id: u64,
    ) {
        let beat = u64::from(self.heartbeat_ms());
        let Some(told) = self.nodes.get(&id).map(|n| u64::from(n.beat_ms)) else {
            return;
        };
        if told * 3 / 2 < beat || beat * 3 / 2 < told {
            let msg = self.registered(id);
            fx.send.push(Outbound::Agent {
                peer,
                request_id,
                msg,
            });
        }
    }

    /// What an agent the broker does not know is told: register again, answering a
    /// challenge of this connection's when the broker signs its messages.
    pub(super) fn reregister(&mut self, peer: &PeerId, now_us: u64) -> BrokerMessage {
        if self.cfg.signer.is_none() {
            return BrokerMessage::Reregister;
        }
        // A connection already challenged is given the same challenge again (its
        // queued heartbeats, arriving after a restart, each ask): a new one would
        // refuse the registration answering the first, and each refusal cost the node
        // another round.
        if let Some((nonce, at)) = self.challenges.get(peer)
            && now_us.saturating_sub(*at) <= CHALLENGE_VALID_US
        {
            return BrokerMessage::Challenge {
                nonce: nonce.clone(),
            };
        }
        // Room for every known node to be challenged at once (a broker restarted
        // before 10,000 nodes): a smaller cap evicted challenges before their answers
        // arrived, and each answer refused made another challenge.
        let cap = MAX_CHALLENGES.max(self.nodes.len().saturating_mul(2));
        if self.challenges.len() >= cap {
            // Expired ones are refused where they are used; they are swept only here,
            // not at every challenge (a walk of them all each time).
            self.challenges
                .retain(|_, (_, at)| now_us.saturating_sub(*at) <= CHALLENGE_VALID_US);
        }
        if self.challenges.len() >= cap {
            // Connections that never answer: the oldest challenge goes.
            if let Some(oldest) = self
                .challenges
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(p, _)| p.clone())
            {
                self.challenges.remove(&oldest);
            }
        }
        let nonce = self.nonce(b"challenge", peer).to_vec();
        self.challenges
            .insert(peer.clone(), (nonce.clone(), now_us));
        BrokerMessage::Challenge { nonce }
    }

    /// A registration repeated on the connection whose registration was accepted,
    /// with the challenge that registration answered (its session).
    fn is_repeat_registration(&self, peer: &PeerId, reg: &Registration) -> bool {
        !reg.challenge.is_empty()
            && self
                .node_by_name
                .get(&reg.name)
                .and_then(|id| self.nodes.get(id))
                .is_some_and(|n| {
                    n.peer.as_ref() == Some(peer)
                        && n.session.as_deref() == Some(&reg.challenge[..])
                })
    }

    /// 16 bytes no one without the seed can tell from any others: a hash of the
    /// random seed, a count never used before, what they are for and the connection
    /// they are given to.
    pub(super) fn nonce(&mut self, purpose: &[u8], peer: &PeerId) -> [u8; 16] {
        use sha2::{Digest, Sha256};
        self.nonce_count += 1;
        let mut h = Sha256::new();
        h.update(self.nonce_seed);
        h.update(self.nonce_count.to_le_bytes());
        h.update(purpose);
        h.update(peer);
        let mut out = [0; 16];
        out.copy_from_slice(&h.finalize()[..16]);
        out
    }

    /// The random seed challenges and listings' tokens are made from (the shell's,
    /// from the kernel).
    pub fn set_nonce_seed(&mut self, seed: [u8; 32]) {
        self.nonce_seed = seed;
    }

    /// Seals the messages to agents (signed brokers): each for its node's registration,
    /// numbered in the order they leave. Challenges and errors go as they are; a
    /// message to a connection with no registration is left unsealed, and an agent
    /// that checks its broker ignores it.
    pub fn seal(&mut self, out: &mut [Outbound]) {
        let Some(signer) = self.cfg.signer.clone() else {
            return;
        };
        for o in out.iter_mut() {
            let Outbound::Agent { peer, msg, .. } = o else {
                continue;
            };
            if matches!(
                msg,
                BrokerMessage::Challenge { .. }
                    | BrokerMessage::Error(_)
                    | BrokerMessage::Sealed(_)
            ) {
                continue;
            }
            let Some(node) = self
                .node_by_peer
                .get(peer)
                .and_then(|id| self.nodes.get_mut(id))
            else {
                continue;
            };
            let Some(session) = node.session.clone() else {
                continue;
            };
            node.seq += 1;
            match signer.seal(&node.name, &session, node.seq, msg) {
                Ok(sealed) => *msg = sealed,
                Err(e) => tracing::error!(node = %node.name, error = %e, "cannot seal a message"),
            }
        }
    }

    /// Drains node `id` for a fault of its own (`why`), unless it is drained already.
    pub(super) fn drain_node_for_fault(
        &mut self,
        fx: &mut Effects,
        id: NodeId,
        why: &str,
        now_us: u64,
    ) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if node.drain.is_some() {
            return;
        }
        tracing::error!(node = %node.name, reason = %why, "node drained: it failed to launch a job");
        node.drain = Some(why.to_string());
        node.drain_by = Some(("root".into(), 0, now_us));
        let (idx, up) = (node.idx, node.up());
        fx.store.push(StoreOp::UpsertNode(Self::node_row(node)));
        if up {
            self.sched.set_health(
                idx,
                sched::Health::Draining {
                    reason: why.to_string(),
                },
                secs(now_us),
            );
        }
    }

    pub(super) fn register(
        &mut self,
        fx: &mut Effects,
        peer: PeerId,
        request_id: u64,
        caller: Option<&Caller>,
        reg: Registration,
        now_us: u64,
    ) {
        match caller {
            Some(c) if c.uid == 0 => {}
            Some(c) => {
                let msg = format!(
                    "node registration refused: credential is for uid {} ({}), agents must run as root",
                    c.uid, c.user
                );
                fx.send.push(Outbound::Agent {
                    peer,
                    request_id,
                    msg: BrokerMessage::Error(err(ErrorCode::PermissionDenied, msg)),
                });
                return;
            }
            None => {
                let msg = "node registration refused: no valid credential";
                fx.send.push(Outbound::Agent {
                    peer,
                    request_id,
                    msg: BrokerMessage::Error(err(ErrorCode::Unauthenticated, msg)),
                });
                return;
            }
        }
        if self.cfg.signer.is_some() {
            // Used up only when answered: a late registration with an older nonce
            // must not take the challenge its connection is answering now.
            let fresh = self.challenges.get(&peer).is_some_and(|(nonce, at)| {
                !nonce.is_empty()
                    && *nonce == reg.challenge
                    && now_us.saturating_sub(*at) <= CHALLENGE_VALID_US
            });
            if fresh {
                self.challenges.remove(&peer);
            }
            if !fresh && self.is_repeat_registration(&peer, &reg) {
                // The agent sent its registration again before the answer to the
                // first arrived (a busy broker: a restart before thousands of
                // nodes). Its session stands: it is told again, and nothing resets
                // (a new challenge would unregister a registered node and cost it
                // another round, and under load the rounds only grew).
                if let Some(id) = self.node_by_name.get(&reg.name).copied() {
                    let msg = self.registered(id);
                    fx.send.push(Outbound::Agent {
                        peer,
                        request_id,
                        msg,
                    });
                }
                return;
            }
            if !fresh {
                // A first registration, a stale one, or one captured elsewhere and
                // played here: this connection gets a challenge of its own.
                if !reg.challenge.is_empty() {
                    tracing::warn!(node = %reg.name, "a registration answered no challenge given to its connection");
                }
                let msg = self.reregister(&peer, now_us);
                fx.send.push(Outbound::Agent {
                    peer,
                    request_id,
                    msg,
                });
                return;
            }
        }
        let id = match self.node_by_name.get(&reg.name) {
            Some(id) => *id,
            None => {
                let id = NodeId(self.next_node);
                self.next_node += 1;
                self.add_node(NodeRow {
                    id,
                    name: reg.name.clone(),
                    cpus: reg.cpus,
                    mem_mb: reg.mem_mb,
                    last_seen_us: now_us,
                    drain_reason: None,
                    drain_by: None,
                    gpus: reg.gpus.clone(),
                });
                id
            }
        };
        if let Some(node) = self.nodes.get(&id) {
            if node.cpus != reg.cpus || node.mem_mb != reg.mem_mb {
                tracing::warn!(
                    node = %reg.name, cpus = reg.cpus, mem_mb = reg.mem_mb,
                    "the node registers another size than it first did; the scheduler keeps the first"
                );
            }
            if node.gpus != reg.gpus || node.gpu_backend != reg.gpu_backend {
                tracing::info!(
                    node = %reg.name, gpus = reg.gpus.len(), backend = %reg.gpu_backend,
                    "the node's GPUs as its agent reports them"
                );
            }
            // GPUs are what the agent finds now (MIG modes and static layouts change
            // with the admin's work); the jobs running there keep theirs.
            let mut with_new = node.clone();
            with_new.gpus = reg.gpus.clone();
            self.sched.set_node_gpus(node.idx, with_new.sched_gpus());
            let health = match &node.drain {
                Some(reason) => sched::Health::Draining {
                    reason: reason.clone(),
                },
                None => sched::Health::Up,
            };
            self.sched.set_health(node.idx, health, secs(now_us));
        }
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if let Some(old) = node.peer.take() {
            self.node_by_peer.remove(&old);
        }
        node.peer = Some(peer.clone());
        node.session = Some(reg.challenge.clone());
        node.launches = 0;
        node.launch_no.clear();
        node.seq = 0;
        node.last_seen_us = now_us;
        node.enforced = reg.enforced;
        node.agent_version = reg.agent_version;
        node.gpus = reg.gpus;
        node.gpu_backend = reg.gpu_backend;
        // Said only when it accounts for the CPUs the node offers.
        node.topology = reg.topology.filter(|t| {
            u64::from(t.sockets) * u64::from(t.cores_per_socket) * u64::from(t.threads_per_core)
                == u64::from(reg.cpus)
        });
        node.step_endpoint = reg.step_endpoint;
        self.node_by_peer.insert(peer.clone(), id);
        fx.store.push(StoreOp::UpsertNode(Self::node_row(node)));
        let msg = self.registered(id);
        fx.send.push(Outbound::Agent {
            peer: peer.clone(),
            request_id,
            msg,
        });
        // The ends that happened while the broker was away come first: those jobs are
        // over, with their own state and exit code, not lost with the agent.
        for end in reg.ended {
            self.job_ended(fx, &peer, 0, id, end);
        }
        self.reconcile(fx, id, &reg.running, None, now_us);
    }

    /// Makes the broker's view of a node's jobs agree with what its agent runs.
    pub(super) fn reconcile(
        &mut self,
        fx: &mut Effects,
        node_id: NodeId,
        running: &[JobId],
        // A heartbeat's count of the launches it had received; `None`: a registration.
        launches: Option<u64>,
        now_us: u64,
    ) {
        let Some(node) = self.nodes.get(&node_id) else {
            return;
        };
        let Some(peer) = node.peer.clone() else {
            return;
        };
        let reported: BTreeSet<JobId> = running.iter().copied().collect();
        // Jobs the broker placed here that the agent does not run: lost with the agent.
        // A launch still in flight is not lost: the agent lists a job from the moment
        // it accepts the launch, and a heartbeat sent before that is older than it.
        // Launches wait while the store takes no writes, and leave once it does.
        let ready = self.store_ready_since_us;
        let lost: Vec<JobId> = node
            .running
            .iter()
            .filter(|j| !reported.contains(j))
            .filter(|j| match (launches, node.launch_no.get(j)) {
                (Some(seen), Some(no)) => seen >= *no,
                _ => true,
            })
            .filter(|j| {
                self.jobs.get(j).is_some_and(|job| {
                    job.start_us.zip(ready).is_some_and(|(s, r)| {
                        s.max(r)
                            .saturating_add(2 * u64::from(self.heartbeat_ms()) * 1000)
                            < now_us
                    })
                })
            })
            .copied()
            .collect();
        for j in lost {
            let name = self.nodes[&node_id].name.clone();
            // Never started: its start unconfirmed, and either this is the agent's
            // registration (it restarted before it kept the job), or the launch went
            // before the agent's registration (a broker killed as it sent it, a
            // leader replaced). Not so: a launch this agent counted, then dropped.
            let never_started = self.nodes.get_mut(&node_id).is_some_and(|n| {
                (launches.is_none() || !n.launch_no.contains_key(&j)) && n.unstarted.remove(&j)
            });
            if never_started {
                // It never ran, and runs again elsewhere or later, as Slurm requeues
                // a batch job whose launch failed.
                self.launch_lost(
                    fx,
                    j,
                    format!("launch lost: node {name} restarted before the job started"),
                    now_us,
                );
                continue;
            }
            let mut end = self.end_of(j, JobState::NodeFail, now_us);
            end.reason = Some(format!(
                "node {name} no longer runs the job (agent restarted)"
            ));
            self.finish(fx, end);
        }
        // What the agent lists has started.
        if let Some(n) = self.nodes.get_mut(&node_id) {
            for j in running {
                n.unstarted.remove(j);
            }
        }
        // Jobs the agent runs that must not run: finished, cancelled, or placed elsewhere.
        for j in reported {
            let keep = self.jobs.get(&j).is_some_and(|job| {
                job.state.is_active()
                    && (job.node == Some(node_id) || job.extra_nodes.contains(&node_id))
            });
            // A kill the agent may have missed while it was away (a registration
            // follows a restart): a cancel (the job COMPLETING) or a preemption is
            // sent again. An agent whose job is completing by itself ignores it.
            if keep && launches.is_none() {
                let again = match self.jobs.get(&j) {
                    Some(job) if job.preempted_by.is_some() => Some(self.preempt_grace(j)),
                    Some(job) if job.state == JobState::Completing => Some(None),
                    _ => None,
                };
                if let Some(grace_s) = again {
                    fx.send.push(Outbound::Agent {
                        peer: peer.clone(),
                        request_id: 0,
                        msg: BrokerMessage::Kill {
                            job: j,
                            state: JobState::Cancelled,
                            grace_s,
                        },
                    });
                }
            }
            if !keep {
                let state = self
                    .jobs
                    .get(&j)
                    .map(|job| job.state)
                    .filter(|s| s.is_terminal())
                    .unwrap_or(JobState::NodeFail);
                fx.send.push(Outbound::Agent {
                    peer: peer.clone(),
                    request_id: 0,
                    msg: BrokerMessage::Kill {
                        job: j,
                        state,
                        grace_s: None,
                    },
                });
            }
        }
    }

    /// Node `id` is DOWN (`why`): its connection is forgotten and its jobs end
    /// NODE_FAIL.
    pub(super) fn node_down(&mut self, fx: &mut Effects, id: NodeId, why: &str, now_us: u64) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        if let Some(p) = node.peer.take() {
            self.node_by_peer.remove(&p);
        }
        let name = node.name.clone();
        let idx = node.idx;
        let jobs: Vec<JobId> = node.running.iter().chain(&node.held).copied().collect();
        for j in jobs {
            let mut end = self.end_of(j, JobState::NodeFail, now_us);
            end.reason = Some(format!("node {name} {why}"));
            self.finish(fx, end);
        }
        self.sched.set_health(
            idx,
            sched::Health::Down {
                reason: why.to_string(),
            },
            secs(now_us),
        );
    }

    /// Whether an agent message may come over a connection that presented CURVE key
    /// `key`: with CURVE on, the key must be a node's in the allowlist, and a
    /// registration must be for that node. Why not, if not.
    pub fn agent_key_check(&self, key: Option<&str>, msg: &AgentMessage) -> Result<(), String> {
        if !self.cfg.curve {
            return Ok(());
        }
        let Some(key) = key else {
            return Err("this connection presented no CURVE key".into());
        };
        let node = self.node_of_key(key);
        match (node.as_ref(), msg) {
            (None, _) => Err(format!(
                "key {key} is not in the broker's allowlist (bh admin node add NAME --key KEY)"
            )),
            (Some(n), AgentMessage::Register(r)) if *n != r.name => Err(format!(
                "key {key} is node {n}'s; it cannot register node {}",
                r.name
            )),
            _ => Ok(()),
        }
    }

    /// The node the allowlist admits by `key`. Every agent message asks (a heartbeat
    /// from each node, 10,000 of them at scale), so that a walk of the allowlist for
    /// each was most of an idle broker's CPU at 10,000 nodes: an index of it by key
    /// answers, each answer checked against the allowlist itself (which admission,
    /// revocation and reloads change), and rebuilt when it was stale or missed a key
    /// the allowlist has.
    fn node_of_key(&self, key: &str) -> Option<String> {
        let admits = |n: &String| self.cfg.node_keys.get(n).is_some_and(|k| k == key);
        if let Some(n) = self.key_index.borrow().get(key).filter(|n| admits(n)) {
            return Some(n.clone());
        }
        let node = self
            .cfg
            .node_keys
            .iter()
            .find(|(_, k)| k.as_str() == key)
            .map(|(n, _)| n.clone());
        if node.is_some() {
            *self.key_index.borrow_mut() = self
                .cfg
                .node_keys
                .iter()
                .map(|(n, k)| (k.clone(), n.clone()))
                .collect();
        }
        node
    }

    /// Node keys the store kept (`bh admin node add`), over the configuration's; a
    /// key revoked (`bh admin node remove`) stays revoked even if the configuration
    /// still lists it.
    pub fn restore_node_keys(&mut self, keys: Vec<(String, String)>) {
        self.stored_keys.extend(keys);
        self.apply_stored_keys();
    }

    pub(super) fn apply_stored_keys(&mut self) {
        for (node, key) in &self.stored_keys {
            match key.strip_prefix(REVOKED) {
                Some(old) => {
                    if self.cfg.node_keys.get(node).is_some_and(|k| k == old) {
                        self.cfg.node_keys.remove(node);
                    }
                }
                None => {
                    self.cfg.node_keys.insert(node.clone(), key.clone());
                }
            }
        }
    }
}
