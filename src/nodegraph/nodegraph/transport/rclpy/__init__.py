"""The rclpy backend: ``RclpyNode``, the node interface (``nodegraph.graph.api``) on a real ``rclpy.node.Node``.

UNVERIFIED HERE: this machine has no ROS 2 (rclpy is in no reachable registry), so this module has only been
compiled, linted and type-checked (rclpy as ``Any``), never imported or run; it has no tests on purpose (a
fake rclpy would only test the fake). A ROS 2 Jazzy user verifies it with::

    source /opt/ros/jazzy/setup.bash
    colcon build --symlink-install && source install/setup.bash
    python3 -c "from nodegraph.transport.runtime import backend_name as b; print(b())"   # rclpy
    SO101_TRANSPORT=rclpy ros2 launch launch/demo.launch.py rate:=50
    ros2 node list; ros2 topic hz /joint_states; ros2 param get /joint_state_source rate_hz
    # Ctrl-C the launch: every node exits with code 0 and the recorder's bag is closed (ros2 bag info)
    ros2 run so101_nodes joint_state_source --ros-args -p rate_hz:=-1; echo $?     # 1, error logged

and, for services and actions, ``ros2 service call`` / ``ros2 action send_goal --feedback`` against a node
offering them (Ctrl-C during a goal: the server reports CANCELED).

How the interface maps onto rclpy, written the way ros2/examples and ros2/demos write nodes:

- ``rclpy.init`` once per process (with the node's arguments), ``rclpy.try_shutdown`` when the last
  ``RclpyNode`` this module started it for shuts down. Signals are ours (``SignalHandlerOptions.NO``):
  ``spin()`` turns SIGINT/SIGTERM into a clean shutdown of every node, as ``ZenohNode.spin`` does.
- One ``MultiThreadedExecutor`` per node, spun on a background thread. Subscriptions, services and timers
  share one ``MutuallyExclusiveCallbackGroup`` (one callback at a time, like the zenoh executor); action
  servers, action clients and service clients use a ``ReentrantCallbackGroup``, so goals execute
  concurrently and a callback may wait on a service or action reply without deadlocking the executor (as
  long as a pool thread is free: ``EXECUTOR_THREADS``).
- Callback exceptions are logged and the node keeps running (as in ``ZenohNode``); a failing service
  callback answers the default response (rclpy cannot leave a request unanswered).
- ``use_sim_time`` is rclpy's own parameter; with it, ``now_ns``/``stamp`` and timers follow ``/clock``.

Modules (as the zenoh backend's): ``node`` (RclpyNode), ``entities`` (logger, timer, publisher, subscription,
client), ``actions`` (goal handles, action client), ``context`` (rclpy.init, signals, futures),
``conversion`` (interface names, QoS, arrays), ``fields`` (rosidl's field rules; pure Python, tested here).
Nothing here is imported by this ``__init__``: ``import rclpy`` only happens when ``node`` is imported.
"""
