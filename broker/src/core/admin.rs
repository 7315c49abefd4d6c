//! Administrative requests (`bh admin`: drain, resume, reservations, node keys),
//! the state restored from the store beside jobs and nodes (fair-share usage,
//! reservations), and a configuration reloaded (SIGHUP).

use super::*;

impl Core {
    /// Adds an administrator's reservation (also when loading it from the store).
    pub(super) fn add_reservation(
        &mut self,
        r: &bulkhead_proto::msg::Reservation,
    ) -> Result<(), String> {
        if self.reservations.contains_key(&r.name) {
            return Err(format!("reservation {} exists", r.name));
        }
        let mut nodes = Vec::new();
        for n in &r.nodes {
            match self.node_by_name.get(n).and_then(|id| self.nodes.get(id)) {
                Some(node) => nodes.push(node.idx),
                None => return Err(format!("node {n} does not exist")),
            }
        }
        let mut accounts = std::collections::BTreeSet::new();
        for a in &r.accounts {
            match self.cfg.accounts.iter().position(|x| &x.name == a) {
                Some(i) => accounts.insert(sched::AccountIdx(i as u32)),
                None => return Err(format!("account {a} does not exist")),
            };
        }
        self.sched.add_reservation(sched::AdminReservation {
            name: r.name.clone(),
            nodes,
            per_node: (r.cpus.is_some() || r.gpus.is_some()).then(|| sched::Res {
                cpus: r.cpus.unwrap_or(0),
                gpus: r.gpus.unwrap_or(0),
                ..Default::default()
            }),
            start: secs(r.start_us),
            end: secs(r.end_us),
            users: r.users.iter().copied().collect(),
            accounts,
        })?;
        self.reservations.insert(r.name.clone(), r.clone());
        Ok(())
    }

    /// Restores the fair-share usage the store holds.
    pub fn restore_fairshare(&mut self, at: u64, usage: &[(String, f64)]) {
        self.sched.restore_fairshare(at, usage);
    }

    /// Restores the reservations the store holds.
    pub fn restore_reservations(&mut self, list: Vec<bulkhead_proto::msg::Reservation>) {
        for r in list {
            if let Err(e) = self.add_reservation(&r) {
                tracing::warn!(reservation = %r.name, error = %e, "a stored reservation no longer fits the cluster");
            }
        }
    }

    pub(super) fn reserve(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        r: bulkhead_proto::msg::Reservation,
    ) -> ClientReply {
        if let Err(e) = self.add_reservation(&r) {
            return ClientReply::Error(err(ErrorCode::Invalid, e));
        }
        fx.store.push(StoreOp::UpsertReservation(r.clone()));
        tracing::info!(reservation = %r.name, nodes = ?r.nodes, by = %caller.user, "reservation made");
        ClientReply::Done(format!(
            "reservation {} holds {} node(s)",
            r.name,
            r.nodes.len()
        ))
    }

    pub(super) fn admin(
        &mut self,
        fx: &mut Effects,
        caller: &Caller,
        op: AdminOp,
        now_us: u64,
    ) -> ClientReply {
        // Operators drain and resume nodes; reservations are the admins'.
        let needed = match &op {
            AdminOp::Drain { .. } | AdminOp::Resume { .. } | AdminOp::ListNodeKeys => {
                Role::Operator
            }
            AdminOp::Reserve(_)
            | AdminOp::Unreserve { .. }
            | AdminOp::AddNodeKey { .. }
            | AdminOp::RemoveNodeKey { .. }
            | AdminOp::Reconfigure => Role::Admin,
        };
        if let Err(e) = self.require(caller, needed, "do this") {
            tracing::warn!(user = %caller.user, ?op, "refused an administrative request");
            return ClientReply::Error(e);
        }
        let (name, drain) = match op {
            AdminOp::Drain { node, reason } => (
                node,
                Some(if reason.is_empty() {
                    "drained by root".to_string()
                } else {
                    reason
                }),
            ),
            AdminOp::Resume { node } => (node, None),
            // The shell reads the file and calls [`Core::admin_reconfigure`].
            AdminOp::Reconfigure => {
                return ClientReply::Error(err(
                    ErrorCode::Invalid,
                    "the configuration is read by the broker's shell".to_string(),
                ));
            }
            AdminOp::Reserve(r) => return self.reserve(fx, caller, r),
            AdminOp::AddNodeKey { node, key } => {
                if let Err(e) = bulkhead_net::curve::parse_key("the node key", &key) {
                    return ClientReply::Error(err(ErrorCode::Invalid, e.to_string()));
                }
                tracing::info!(%node, %key, by = %caller.user, "node key admitted");
                self.cfg.node_keys.insert(node.clone(), key.clone());
                self.stored_keys.insert(node.clone(), key.clone());
                fx.store.push(StoreOp::UpsertNodeKey {
                    node: node.clone(),
                    key,
                });
                return ClientReply::Done(format!("the agent of {node} is admitted with that key"));
            }
            AdminOp::ListNodeKeys => {
                return ClientReply::NodeKeys(
                    self.cfg
                        .node_keys
                        .iter()
                        .map(|(n, k)| (n.clone(), k.clone()))
                        .collect(),
                );
            }
            AdminOp::RemoveNodeKey { node } => {
                let Some(key) = self.cfg.node_keys.remove(&node) else {
                    return ClientReply::Error(err(
                        ErrorCode::NotFound,
                        format!("node {node} has no admitted key"),
                    ));
                };
                tracing::warn!(%node, %key, by = %caller.user, "node key revoked");
                // Kept as revoked, so that the configuration's [node_keys] does not
                // admit it again at the next start.
                let revoked = format!("{REVOKED}{key}");
                self.stored_keys.insert(node.clone(), revoked.clone());
                fx.store.push(StoreOp::UpsertNodeKey {
                    node: node.clone(),
                    key: revoked,
                });
                let mut down = "";
                if let Some(id) = self.node_by_name.get(&node).copied()
                    && self.nodes.get(&id).is_some_and(Node::up)
                {
                    self.node_down(
                        fx,
                        id,
                        &format!("its key was revoked by {}", caller.user),
                        now_us,
                    );
                    down = "; the node is down and its jobs ended NODE_FAIL";
                }
                return ClientReply::Done(format!(
                    "the key of {node} is revoked: its agent is refused{down}"
                ));
            }
            AdminOp::Unreserve { name } => {
                if self.reservations.remove(&name).is_none() {
                    return ClientReply::Error(err(
                        ErrorCode::NotFound,
                        format!("reservation {name} does not exist"),
                    ));
                }
                self.sched.remove_reservation(&name);
                fx.store.push(StoreOp::DeleteReservation(name.clone()));
                tracing::info!(reservation = %name, by = %caller.user, "reservation ended by an administrator");
                return ClientReply::Done(format!("reservation {name} ended"));
            }
        };
        let Some(id) = self.node_by_name.get(&name).copied() else {
            return ClientReply::Error(err(
                ErrorCode::NotFound,
                format!("node {name} does not exist"),
            ));
        };
        let Some(node) = self.nodes.get_mut(&id) else {
            return ClientReply::Error(err(
                ErrorCode::NotFound,
                format!("node {name} does not exist"),
            ));
        };
        node.drain = drain.clone();
        node.drain_by = drain
            .as_ref()
            .map(|_| (caller.user.clone(), caller.uid, now_us));
        if drain.is_none() && !node.gpu_faults.is_empty() {
            tracing::info!(node = %name, gpus = ?node.gpu_faults.keys().collect::<Vec<_>>(), "faulted GPUs back in service");
            node.gpu_faults.clear();
            let specs = node.sched_gpus();
            self.sched.set_node_gpus(node.idx, specs);
        }
        let Some(node) = self.nodes.get(&id) else {
            return ClientReply::Error(err(
                ErrorCode::NotFound,
                format!("node {name} does not exist"),
            ));
        };
        let (idx, up) = (node.idx, node.up());
        let row = Self::node_row(node);
        fx.store.push(StoreOp::UpsertNode(row));
        if up {
            let health = match &drain {
                Some(reason) => sched::Health::Draining {
                    reason: reason.clone(),
                },
                None => sched::Health::Up,
            };
            self.sched.set_health(idx, health, secs(now_us));
        }
        tracing::info!(node = %name, drain = ?drain, by = %caller.user, "node state changed by an administrator");
        ClientReply::Done(match drain {
            Some(r) => format!("node {name} draining: {r}"),
            None => format!("node {name} resumed"),
        })
    }
}
