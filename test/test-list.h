/* Every test, in the order the runner runs them: T(name, time limit s). */
T(version, 5)
T(strerror_all_codes, 5)
T(path_validation, 5)
T(bad_args_options_client, 10)
T(bad_args_lock, 20)
T(release_not_held_double_release, 20)
T(cancel_after_completion, 20)
T(acquire_release_basic, 20)
T(fencing_token_grows, 20)
T(contenders_order, 20)
T(trylock, 20)
T(timeout, 20)
T(cancel_each_state, 30)
T(fifo_order, 30)
T(mutual_exclusion_sessions, 60)
T(mutual_exclusion_processes, 90)
T(many_distinct_paths, 120)
T(same_process_same_predecessor, 30)
T(free_lock_in_callback, 20)
T(free_client_in_callback, 20)
T(free_client_with_pending, 30)
T(node_deleted_by_other, 20)
T(chroot, 20)
/* T(session_expiry_while_holding, 60) */
/* T(session_expiry_while_waiting, 60) */
/* T(server_restart_held_and_queued, 90) */
/* T(create_reply_lost, 60) */
/* T(list_reply_lost, 60) */
/* T(cancel_while_disconnected, 60) */
/* T(release_while_disconnected, 60) */
