/* Tests against the suite's 3-node ensemble (run-tests --ensemble), in
 * order: T(name, time limit s). Each leaves every node running. */
T(ensemble_basic, 30)
T(ensemble_kill_leader, 90)
T(ensemble_kill_connected_follower, 90)
T(ensemble_cut_off_holder_told_lost_before_the_next_holds, 90)
T(ensemble_rolling_restart, 180)
T(ensemble_session_moved, 60)
T(ensemble_lagging_follower_never_grants_twice, 240)
